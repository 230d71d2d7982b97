package nested

import "os"

var _ = os.Getenv("HOOKINBOX_IN_ANOTHER_MODULE")
