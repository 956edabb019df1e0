package shared

// Exported for the tests of package shared_test.
var (
	VersionAtLeast = versionAtLeast
	CompareIDs     = compareIDs
)
