package ignored

import "os"

var _ = os.Getenv("HOOKINBOX_IN_TESTDATA")
