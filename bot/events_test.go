package bot

import "testing"

func TestClassify(t *testing.T) {
	const botUser = "U0BOT"
	for _, tc := range []struct {
		name string
		in   incoming
		want route
	}{
		{"mention", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> what is 2+2", TS: "1.1"}, question},
		{"mention help", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> help", TS: "1.1"}, command},
		{"bare mention", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT>", TS: "1.1"}, command},
		{"mention debug", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> debug on", TS: "1.1"}, command},
		{"debug as a word in a question", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> debug this formula for me: x^2 + 3x", TS: "1.1"}, question},
		{"help as a word in a question", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> help me integrate x^2", TS: "1.1"}, question},
		{"debug this", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> debug this", TS: "1.1"}, question},
		{"debug status", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> debug status", TS: "1.1"}, command},
		{"channel copy of mention", incoming{Channel: "C1", ChannelType: "channel", User: "U1", Text: "<@U0BOT> hi there friend", TS: "1.1"}, question},
		{"dm", incoming{Channel: "D1", ChannelType: "im", User: "U1", Text: "what is pi", TS: "1.1"}, question},
		{"chatter", incoming{Channel: "C1", ChannelType: "channel", User: "U1", Text: "lunch?", TS: "1.1"}, ignore},
		{"thread reply", incoming{Channel: "C1", ChannelType: "channel", User: "U1", Text: "and squared?", TS: "1.2", ThreadTS: "1.1"}, followUp},
		{"thread reply to someone else", incoming{Channel: "C1", ChannelType: "channel", User: "U1", Text: "<@U2> thoughts?", TS: "1.2", ThreadTS: "1.1"}, ignore},
		{"own message", incoming{Channel: "C1", ChannelType: "channel", User: "U0BOT", BotID: "B1", Text: "The answer", TS: "1.2", ThreadTS: "1.1"}, ignore},
		{"other bot", incoming{Mention: true, Channel: "C1", User: "U9", BotID: "B9", Text: "<@U0BOT> 2+2", TS: "1.1"}, ignore},
		{"edit", incoming{Channel: "C1", ChannelType: "channel", SubType: "message_changed", Text: "", TS: "1.3"}, ignore},
		{"edited mention", incoming{Mention: true, Channel: "C1", User: "U1", Text: "<@U0BOT> 2+2", TS: "1.1", Edited: true}, ignore},
		{"delete", incoming{Channel: "C1", ChannelType: "channel", SubType: "message_deleted", TS: "1.3"}, ignore},
		{"join", incoming{Channel: "C1", ChannelType: "channel", User: "U1", SubType: "channel_join", Text: "<@U1> has joined", TS: "1.3"}, ignore},
		{"file share in dm", incoming{Channel: "D1", ChannelType: "im", User: "U1", SubType: "file_share", Text: "sum this", TS: "1.3"}, question},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.in, botUser); got != tc.want {
				t.Errorf("classify = %v, want %v", got, tc.want)
			}
		})
	}
}
