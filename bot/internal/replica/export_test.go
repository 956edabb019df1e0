package replica

// Exported for the tests of package replica_test.
var (
	VersionAtLeast = versionAtLeast
	CompareIDs     = compareIDs
)
