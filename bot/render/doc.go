// Package render turns what the bot shows into Slack's formats: the
// model's Markdown into mrkdwn ([Mrkdwn], [SplitMrkdwn], [Escape]) or,
// for a streamed answer, into Markdown Slack cannot act on ([Guard]); an
// executeCode run into a tool card ([Card]); a CSV a run wrote into a
// data_table ([ReadTable]); an image into its alt text ([AltText]). It
// also names Slack's limits ([SectionChars], [MaxBlocks], …) and the
// message metadata types ([MetaToolRun], …) that let a restarted bot
// recognise its own messages.
//
// Everything here is pure: no Slack calls, no state. Everything a model
// or a program wrote is neutralised ([safetext]: controls shown, invisible
// characters removed) before it is cut, so the limits count what Slack
// receives. A Markdown link whose text names another place than the one
// it goes to (a URL, a www. name or a domain of another host, or any for
// an internationalised host) shows its target instead of its text.
package render
