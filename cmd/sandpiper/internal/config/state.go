package config

import (
	"context"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// State is the part of the environment about the Python variables a
// conversation's runs keep (the bot's threads, the terminal chat; never
// exec). Its default size is sandbox's.
type State struct {
	On      OnOff    `env:"SANDPIPER_STATE"`
	MaxSize ByteSize `env:"SANDPIPER_STATE_MAX_SIZE"`
}

// LoadState reads the state's variables; errors name the variable to fix.
func LoadState(ctx context.Context, lookup envconfig.Lookuper) (State, error) {
	s := State{On: true, MaxSize: ByteSize{n: sandbox.DefaultStateSize}}
	return s, Join(Process(ctx, lookup, &s), CheckRange("SANDPIPER_STATE_MAX_SIZE", s.MaxSize, "at least 64KiB", s.MaxSize.n < 64<<10))
}
