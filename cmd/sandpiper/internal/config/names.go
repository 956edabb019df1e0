package config

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// namedLookuper is Lookup's Lookuper: it also lists the variables the
// dotenv files set, for settings whose names are not known in advance
// (SANDPIPER_SOURCE_<NAME>).
type namedLookuper struct {
	envconfig.Lookuper
	files map[string]string
	from  map[string]string // the dotenv file that set each of files
}

// File names the dotenv file the variable name was read from, or ""
// when the environment set it (or nothing did).
func (l namedLookuper) File(name string) string {
	if _, ok := os.LookupEnv(name); ok {
		return ""
	}
	return l.from[name]
}

// Names returns the variables of the environment and of the dotenv
// files.
func (l namedLookuper) Names() []string {
	names := environNames()
	for k := range l.files {
		names = append(names, k)
	}
	return names
}

// VarNames lists the variables lookup knows whose names start with
// prefix, sorted, each once: those of the process environment, and of
// the dotenv files when lookup is [Lookup]'s, or the names a lookuper
// with a Names method gives.
func VarNames(lookup envconfig.Lookuper, prefix string) []string {
	var all []string
	if n, ok := lookup.(interface{ Names() []string }); ok {
		all = n.Names()
	} else {
		all = environNames()
	}
	set := map[string]bool{}
	for _, k := range all {
		if strings.HasPrefix(k, prefix) {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func environNames() []string {
	var names []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return names
}

// ReadDotenvFile reads a file of KEY=value lines, as the dotenv files
// are read (see Lookup).
func ReadDotenvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDotenv(data)
}
