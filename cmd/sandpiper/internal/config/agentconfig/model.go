package agentconfig

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/anthropic"
	"github.com/sandpiper-bot/sandpiper/agent/openai"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// Model APIs (SANDPIPER_MODEL_API).
const (
	apiOpenAI    = "openai"    // OpenAI-compatible chat completions
	apiAnthropic = "anthropic" // Anthropic Messages
)

// keyVars are the variables that can hold the model API key, in order of
// preference, per API.
var keyVars = map[string][]string{
	apiOpenAI:    {"SANDPIPER_MODEL_API_KEY", "AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN", "OPENAI_API_KEY"},
	apiAnthropic: {"SANDPIPER_MODEL_API_KEY", "ANTHROPIC_API_KEY"},
}

// aiGatewayHost is the AI Gateway's host; gatewayKeys are credentials
// meant for it alone.
const aiGatewayHost = "ai-gateway.vercel.sh"

var gatewayKeys = map[string]bool{"AI_GATEWAY_API_KEY": true, "VERCEL_OIDC_TOKEN": true}

// Model is the model's and the agent's part of the environment.
// Its defaults are agent's and the providers'.
type Model struct {
	API          string        `env:"SANDPIPER_MODEL_API"`
	Model        string        `env:"SANDPIPER_MODEL"`
	BaseURL      string        `env:"SANDPIPER_MODEL_BASE_URL"`
	MaxTokens    int64         `env:"SANDPIPER_MODEL_MAX_TOKENS"`
	Timeout      time.Duration `env:"SANDPIPER_MODEL_TIMEOUT"`
	Retries      int           `env:"SANDPIPER_MODEL_RETRIES"`
	MaxSteps     int           `env:"SANDPIPER_MAX_STEPS"`
	Instructions string        `env:"SANDPIPER_INSTRUCTIONS"`
	Debug        config.OnOff  `env:"SANDPIPER_DEBUG"`

	// Key is found among keyVars, not by envconfig.
	Key agent.APIKey
	// DefaultModel is set when SANDPIPER_MODEL is not: Model is the
	// default, which a local server may not have.
	DefaultModel bool
}

// LoadModel reads the model variables, fills in defaults and finds
// the key. Its errors name the variable to fix.
func LoadModel(ctx context.Context, lookup envconfig.Lookuper) (Model, error) {
	c := Model{API: apiOpenAI, Timeout: agent.DefaultRequestTimeout, Retries: agent.DefaultMaxRetries, MaxSteps: agent.DefaultMaxSteps}
	parse := config.Process(ctx, lookup, &c)
	c.API = strings.ToLower(strings.TrimSpace(c.API))
	// The AI Gateway names models provider/model; Anthropic's own API
	// does not.
	c.DefaultModel = c.Model == ""
	switch c.API {
	case apiOpenAI:
		c.BaseURL = cmp.Or(c.BaseURL, openai.DefaultBaseURL)
		c.Model = cmp.Or(c.Model, openai.DefaultModel)
	case apiAnthropic:
		c.BaseURL = cmp.Or(c.BaseURL, anthropic.DefaultBaseURL)
		if strings.TrimSuffix(c.BaseURL, "/") == anthropic.DefaultBaseURL {
			c.Model = cmp.Or(c.Model, anthropic.DefaultModel)
		}
		c.Model = cmp.Or(c.Model, openai.DefaultModel)
	default:
		return c, config.Join(parse, &config.SettingError{Name: "SANDPIPER_MODEL_API", Value: c.API, Problem: "is not a model API",
			Want: fmt.Sprintf("%s (OpenAI-compatible chat completions, the default) or %s (Anthropic Messages), e.g. SANDPIPER_MODEL_API=%s", apiOpenAI, apiAnthropic, apiOpenAI)})
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, config.Join(parse, &config.SettingError{Name: "SANDPIPER_MODEL_BASE_URL", Value: c.BaseURL, Problem: "is not an http(s) URL",
			Want: "e.g. SANDPIPER_MODEL_BASE_URL=" + openai.DefaultBaseURL + " or http://localhost:11434/v1 (Ollama)"})
	}
	bad := config.Join(parse,
		config.CheckRange("SANDPIPER_MAX_STEPS", c.MaxSteps, "at least 1", c.MaxSteps < 1),
		config.CheckRange("SANDPIPER_MODEL_TIMEOUT", c.Timeout, "at least 1s", c.Timeout < time.Second),
		config.CheckRange("SANDPIPER_MODEL_RETRIES", c.Retries, "0 to 20", c.Retries < 0 || c.Retries > 20),
		config.CheckRange("SANDPIPER_MODEL_MAX_TOKENS", c.MaxTokens, "0 (the provider's default) or more", c.MaxTokens < 0),
	)
	// Vercel's credentials go to the AI Gateway only: with another base
	// URL they would fail there, and hand a Vercel token to a third party.
	gateway := u.Hostname() == aiGatewayHost || isLoopback(u.Hostname())
	var candidates []string
	for _, name := range keyVars[c.API] {
		if gateway || !gatewayKeys[name] {
			candidates = append(candidates, name)
		}
	}
	for _, name := range candidates {
		if v, ok := lookup.Lookup(name); ok && strings.TrimSpace(v) != "" {
			c.Key = agent.APIKey{Value: strings.TrimSpace(v), Source: name}
			break
		}
	}
	if c.Key.Value == "" && !isLoopback(u.Hostname()) {
		where := "in the environment, .env.local or .env"
		switch {
		case c.API == apiOpenAI && gateway:
			where += "; `vercel env pull` writes VERCEL_OIDC_TOKEN to .env.local"
		case c.API == apiOpenAI:
			where += "; AI_GATEWAY_API_KEY and VERCEL_OIDC_TOKEN are sent only to " + aiGatewayHost
		}
		return c, config.Join(bad, fmt.Errorf("config: no model API key: set %s (%s)", orList(candidates), where))
	}
	return c, bad
}

// KeyNote says where the key came from: "key from SANDPIPER_MODEL_API_KEY",
// or that none was sent, as a server on loopback needs none.
func (c Model) KeyNote() string {
	if c.Key.Source == "" {
		return "no key sent: a server on this machine needs none"
	}
	return "key from " + c.Key.Source
}

// Local reports whether the model's server is on this machine (Ollama,
// vLLM, LiteLLM).
func (c Model) Local() bool {
	u, err := url.Parse(c.BaseURL)
	return err == nil && isLoopback(u.Hostname())
}

// ModelNote says, for a server on this machine given no SANDPIPER_MODEL,
// that the default model's id is sent, which it may not serve; else "".
func (c Model) ModelNote() string {
	if !c.DefaultModel || !c.Local() {
		return ""
	}
	return fmt.Sprintf("SANDPIPER_MODEL is not set, so the default %s is asked for, which a server on this machine may not have: set SANDPIPER_MODEL to one of its models", c.Model)
}

// isLoopback reports whether host is this machine, where servers such as
// Ollama need no key.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// retry is the providers' retry and timeout policy.
func (c Model) retry() agent.RetryPolicy {
	retries := c.Retries
	if retries == 0 {
		retries = -1 // no retries
	}
	return agent.RetryPolicy{MaxRetries: retries, RequestTimeout: c.Timeout}
}

// New returns the configured provider.
func (c Model) New(log *slog.Logger) (agent.Model, error) {
	cfg := agent.ModelConfig{BaseURL: c.BaseURL, Key: c.Key, Model: c.Model, MaxTokens: c.MaxTokens, Retry: c.retry(), Logger: log}
	if c.API == apiAnthropic {
		return anthropic.New(cfg)
	}
	return openai.New(cfg)
}

// Agent returns the agent, with the given model and tools.
func (c Model) Agent(model agent.Model, tools []agent.Tool, log *slog.Logger) *agent.Agent {
	return &agent.Agent{
		Model:        model,
		Tools:        tools,
		Instructions: c.Instructions,
		MaxSteps:     c.MaxSteps,
		Logger:       log,
	}
}
