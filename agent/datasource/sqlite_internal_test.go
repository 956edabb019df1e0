package datasource

import "testing"

func TestSQLiteStatements(t *testing.T) {
	for q, want := range map[string]int{
		"SELECT 1":                           1,
		"SELECT 1;":                          1,
		"SELECT 1; -- done\n":                1,
		"SELECT 1; /* done */ ;":             1,
		"SELECT 1; SELECT 2":                 2,
		"SELECT ';' AS x":                    1,
		`SELECT "a;b" FROM t`:                1,
		"SELECT [a;b], `c;d` FROM t":         1,
		"SELECT 'it''s; fine'":               1,
		"SELECT 1 -- ; DROP TABLE t":         1,
		"SELECT 1 /* ; */; DELETE FROM t":    2,
		"":                                   0,
		"SELECT 'unterminated; DROP TABLE t": 1,
	} {
		if got := sqliteStatements(q); got != want {
			t.Errorf("sqliteStatements(%q) = %d, want %d", q, got, want)
		}
	}
}
