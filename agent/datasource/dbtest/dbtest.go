// Package dbtest starts real database servers for tests: PostgreSQL and
// MariaDB from their Debian packages, each in a temporary directory on a
// free loopback port, stopped when the test ends. Run as root, the
// servers run as an unprivileged user (postgres, mysql), as they insist.
//
// A test calls [Postgres] or [MariaDB]; when the server's programs are not
// installed the test is skipped, unless SANDPIPER_REQUIRE_DATABASES is
// set (as CI sets it), when it fails.
package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// RequireEnv is the variable that turns a missing server into a failure.
const RequireEnv = "SANDPIPER_REQUIRE_DATABASES"

// postgresBin is where Debian's postgresql package puts its programs:
// the newest version's.
func postgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestV := "", 0
	for _, d := range dirs {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil && v > bestV {
			best, bestV = d, v
		}
	}
	return best
}

// Server is a running database server.
type Server struct {
	// Host and Port are where it listens (TCP, loopback).
	Host string
	Port int
	// Admin is a URL of an administrator (PostgreSQL's postgres, MariaDB's
	// root), for setting up.
	Admin string
	dir   string
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s (%s is set, so this fails rather than skips)", what, RequireEnv)
	}
	t.Skip(what)
}

// freePort returns a loopback TCP port nothing listens on.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runAs returns a command running name as the user when this process is
// root, and as this user otherwise.
func runAs(u *user.User, name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 && u != nil {
		return exec.Command("runuser", append([]string{"-u", u.Username, "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// tempDir makes a directory the user can use, removed at the end.
func tempDir(t testing.TB, u *user.User, prefix string) string {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 && u != nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func serverUser(t testing.TB, name string) *user.User {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		missing(t, fmt.Sprintf("no user %s to run the server as: %v", name, err))
	}
	return u
}

// Postgres starts a PostgreSQL server. Its superuser postgres has the
// password "admin-pw"; connections on TCP need a password.
func Postgres(t testing.TB) *Server {
	t.Helper()
	bin := postgresBin()
	if _, err := os.Stat(filepath.Join(bin, "postgres")); bin == "" || err != nil {
		missing(t, "PostgreSQL is not installed (apt-get install postgresql)")
	}
	u := serverUser(t, "postgres")
	dir := tempDir(t, u, "sandpiper-pg-")
	data := filepath.Join(dir, "data")
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("admin-pw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	initdb := runAs(u, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pw,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	cmd := runAs(u, filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "max_connections=50")
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", Port: port, dir: dir,
		Admin: fmt.Sprintf("postgres://postgres:admin-pw@127.0.0.1:%d/postgres?sslmode=disable", port)}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // fast shutdown
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		logf.Close()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.Admin)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("PostgreSQL did not start: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PostgresURL is the URL of a user of the server's database db.
func (s *Server) PostgresURL(userName, password, db string) string {
	return fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", userName, password, s.Host, s.Port, db)
}

// MySQLURL is the URL of a user of the server's database db.
func (s *Server) MySQLURL(userName, password, db string) string {
	return fmt.Sprintf("mysql://%s:%s@%s:%d/%s", userName, password, s.Host, s.Port, db)
}

// ExecPostgres runs statements as the superuser in database db.
func (s *Server) ExecPostgres(t testing.TB, db string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Replace(s.Admin, "/postgres?", "/"+db+"?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// MariaDB starts a MariaDB server. Its root user connects on the server's
// Unix socket without a password (Admin is a go-sql-driver DSN).
func MariaDB(t testing.TB) *Server {
	t.Helper()
	mysqld, err := exec.LookPath("mariadbd")
	if err != nil {
		if mysqld, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			missing(t, "MariaDB is not installed (apt-get install mariadb-server)")
		}
	}
	installDB, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		missing(t, "MariaDB is not installed (apt-get install mariadb-server)")
	}
	u := serverUser(t, "mysql")
	dir := tempDir(t, u, "sandpiper-mariadb-")
	data := filepath.Join(dir, "data")
	args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if u != nil {
		args = append(args, "--user="+u.Username)
	}
	install := exec.Command(installDB, args...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	sock := filepath.Join(dir, "sock")
	dargs := []string{"--no-defaults", "--datadir=" + data, "--socket=" + sock, "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(dir, "pid"), "--skip-log-bin",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=0", "--log-error=" + filepath.Join(dir, "log")}
	if u != nil {
		dargs = append(dargs, "--user="+u.Username)
	}
	cmd := exec.Command(mysqld, dargs...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", Port: port, dir: dir, Admin: "root@unix(" + sock + ")/?multiStatements=true&charset=utf8mb4"}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		db, err := sql.Open("mysql", s.Admin)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("MariaDB did not start: %v\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ExecMySQL runs statements as root.
func (s *Server) ExecMySQL(t testing.TB, stmts ...string) {
	t.Helper()
	db, err := sql.Open("mysql", s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// SQLite creates a SQLite file (name, in a temporary directory), runs
// stmts in it, and returns its path.
func SQLite(t testing.TB, name string, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}
