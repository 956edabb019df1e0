package agentconfig

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/anthropic"
	"github.com/sandpiper-bot/sandpiper/agent/openai"
)

func TestLoadModelConfig(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		wantAPI string
		wantURL string
		model   string
		key     agent.APIKey
		wantErr string
	}{
		{
			name:    "defaults: the AI Gateway with its key",
			env:     map[string]string{"AI_GATEWAY_API_KEY": "gw-key-123"},
			wantAPI: "openai", wantURL: "https://ai-gateway.vercel.sh/v1", model: "anthropic/claude-opus-4.8",
			key: agent.APIKey{Value: "gw-key-123", Source: "AI_GATEWAY_API_KEY"},
		},
		{
			name:    "SANDPIPER_MODEL_API_KEY wins",
			env:     map[string]string{"SANDPIPER_MODEL_API_KEY": "mine-123", "AI_GATEWAY_API_KEY": "gw-key-123", "VERCEL_OIDC_TOKEN": "oidc-jwt-123", "OPENAI_API_KEY": "sk-oa-123"},
			wantAPI: "openai", wantURL: openai.DefaultBaseURL, model: "anthropic/claude-opus-4.8",
			key: agent.APIKey{Value: "mine-123", Source: "SANDPIPER_MODEL_API_KEY"},
		},
		{
			name:    "then the OIDC token from vercel env pull",
			env:     map[string]string{"SANDPIPER_MODEL_API_KEY": " ", "VERCEL_OIDC_TOKEN": "oidc-jwt-123", "OPENAI_API_KEY": "sk-oa-123"},
			wantAPI: "openai", wantURL: openai.DefaultBaseURL, model: "anthropic/claude-opus-4.8",
			key: agent.APIKey{Value: "oidc-jwt-123", Source: "VERCEL_OIDC_TOKEN"},
		},
		{
			name:    "then OPENAI_API_KEY, here for OpenAI itself",
			env:     map[string]string{"OPENAI_API_KEY": "sk-oa-123", "SANDPIPER_MODEL_BASE_URL": "https://api.openai.com/v1", "SANDPIPER_MODEL": "gpt-5"},
			wantAPI: "openai", wantURL: "https://api.openai.com/v1", model: "gpt-5",
			key: agent.APIKey{Value: "sk-oa-123", Source: "OPENAI_API_KEY"},
		},
		{
			// VERCEL_OIDC_TOKEN is there for the Vercel sandbox; OpenAI would
			// refuse it, and it is not OpenAI's to see.
			name:    "Vercel's credentials go to the AI Gateway only",
			env:     map[string]string{"VERCEL_OIDC_TOKEN": "oidc-jwt-123", "AI_GATEWAY_API_KEY": "gw-key-123", "OPENAI_API_KEY": "sk-oa-123", "SANDPIPER_MODEL_BASE_URL": "https://api.openai.com/v1", "SANDPIPER_MODEL": "gpt-5"},
			wantAPI: "openai", wantURL: "https://api.openai.com/v1", model: "gpt-5",
			key: agent.APIKey{Value: "sk-oa-123", Source: "OPENAI_API_KEY"},
		},
		{
			name:    "no key for another host",
			env:     map[string]string{"VERCEL_OIDC_TOKEN": "oidc-jwt-123", "SANDPIPER_MODEL_BASE_URL": "https://openrouter.ai/api/v1"},
			wantErr: "config: no model API key: set SANDPIPER_MODEL_API_KEY or OPENAI_API_KEY (in the environment, .env.local or .env; AI_GATEWAY_API_KEY and VERCEL_OIDC_TOKEN are sent only to ai-gateway.vercel.sh)",
		},
		{
			name:    "Anthropic's API and model naming",
			env:     map[string]string{"SANDPIPER_MODEL_API": "Anthropic", "ANTHROPIC_API_KEY": "sk-ant-123", "OPENAI_API_KEY": "sk-oa-123"},
			wantAPI: "anthropic", wantURL: anthropic.DefaultBaseURL, model: "claude-opus-4-8",
			key: agent.APIKey{Value: "sk-ant-123", Source: "ANTHROPIC_API_KEY"},
		},
		{
			name:    "Anthropic through the gateway keeps the gateway's model id",
			env:     map[string]string{"SANDPIPER_MODEL_API": "anthropic", "SANDPIPER_MODEL_BASE_URL": "https://ai-gateway.vercel.sh", "SANDPIPER_MODEL_API_KEY": "gw-key-123"},
			wantAPI: "anthropic", wantURL: "https://ai-gateway.vercel.sh", model: "anthropic/claude-opus-4.8",
			key: agent.APIKey{Value: "gw-key-123", Source: "SANDPIPER_MODEL_API_KEY"},
		},
		{
			name:    "a local server needs no key",
			env:     map[string]string{"SANDPIPER_MODEL_BASE_URL": "http://localhost:11434/v1", "SANDPIPER_MODEL": "qwen3"},
			wantAPI: "openai", wantURL: "http://localhost:11434/v1", model: "qwen3",
		},
		{
			name:    "no key",
			env:     map[string]string{"ANTHROPIC_API_KEY": "wrong API"},
			wantErr: "config: no model API key: set SANDPIPER_MODEL_API_KEY, AI_GATEWAY_API_KEY, VERCEL_OIDC_TOKEN or OPENAI_API_KEY (in the environment, .env.local or .env; `vercel env pull` writes VERCEL_OIDC_TOKEN to .env.local)",
		},
		{
			name:    "no Anthropic key",
			env:     map[string]string{"SANDPIPER_MODEL_API": "anthropic", "AI_GATEWAY_API_KEY": "gw-key-123"},
			wantErr: "config: no model API key: set SANDPIPER_MODEL_API_KEY or ANTHROPIC_API_KEY (in the environment, .env.local or .env)",
		},
		{
			name:    "unknown API",
			env:     map[string]string{"SANDPIPER_MODEL_API": "bedrock", "SANDPIPER_MODEL_API_KEY": "k"},
			wantErr: `config: SANDPIPER_MODEL_API=bedrock is not a model API: want openai`,
		},
		{
			name:    "bad base URL",
			env:     map[string]string{"SANDPIPER_MODEL_BASE_URL": "ai-gateway.vercel.sh/v1", "SANDPIPER_MODEL_API_KEY": "k"},
			wantErr: `config: SANDPIPER_MODEL_BASE_URL=ai-gateway.vercel.sh/v1 is not an http(s) URL: want e.g. SANDPIPER_MODEL_BASE_URL=https://ai-gateway.vercel.sh/v1`,
		},
		{
			name:    "bad timeout",
			env:     map[string]string{"SANDPIPER_MODEL_TIMEOUT": "soon", "SANDPIPER_MODEL_API_KEY": "k"},
			wantErr: "config: SANDPIPER_MODEL_TIMEOUT",
		},
		{
			name:    "steps out of range",
			env:     map[string]string{"SANDPIPER_MAX_STEPS": "-1", "SANDPIPER_MODEL_API_KEY": "k"},
			wantErr: "config: SANDPIPER_MAX_STEPS=-1 is out of range: want at least 1",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadModel(t.Context(), envconfig.MapLookuper(tt.env))
			if err != nil || tt.wantErr != "" {
				if err == nil || tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if c.API != tt.wantAPI || c.BaseURL != tt.wantURL || c.Model != tt.model || c.Key != tt.key {
				t.Errorf("got %s %s %s %#v; want %s %s %s %#v", c.API, c.BaseURL, c.Model, c.Key, tt.wantAPI, tt.wantURL, tt.model, tt.key)
			}
			if c.MaxSteps != agent.DefaultMaxSteps || c.Timeout != 3*time.Minute || c.Retries != 3 {
				t.Errorf("defaults: %+v", c)
			}
			m, err := c.New(nil)
			if err != nil || m.ID() != tt.model {
				t.Errorf("newModel = %v, %v", m, err)
			}
			// The key never shows in formatted config.
			if tt.key.Value != "" && strings.Contains(fmt.Sprintf("%v %+v %#v", c, c, c), tt.key.Value) {
				t.Errorf("the key shows in %+v", c)
			}
		})
	}
}
