package migrations

// UpFS applies the migrations of fsys with a lock timeout (tests).
var UpFS = up
