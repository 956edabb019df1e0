package render

const (
	// SectionChars is the most text a section block may hold.
	SectionChars = 3000
	// MaxBlocks is the most blocks in one message.
	MaxBlocks = 50
	// messageTextBudget bounds the text of all blocks of one message;
	// Slack rejects payloads near 12,000 characters (msg_blocks_too_long).
	messageTextBudget = 10000
	// FallbackTextChars bounds a message's top-level (notification) text.
	FallbackTextChars = 3000

	// cardCodeChars and cardOutputChars bound the code and the output
	// shown in a tool card; the rest goes to an attached file.
	cardCodeChars   = 2600
	cardOutputChars = 2600
	// cardStderrChars bounds the extra stderr a debug card shows.
	cardStderrChars = 1200
	// AnswerMessageChars bounds the answer text per message; a longer
	// answer is posted in parts.
	AnswerMessageChars = 9000
	// AnswerMaxParts bounds the parts of one answer; past it the rest
	// is attached as a file.
	AnswerMaxParts = 4

	// MetadataTextChars bounds the code and output kept in a tool card's
	// message metadata for rebuilding a thread's memory.
	MetadataTextChars = 3000
	// RunOutputChars bounds one run's output kept in history.
	RunOutputChars = 4000
)

// Tables: a CSV a run writes is also shown as a data_table block. Slack's
// published limits disagree (one client library says 201 rows, Slack's
// reference and another 101); these are the strictest.
const (
	// slackTableRows is the most data rows a data_table holds, besides
	// its header row.
	slackTableRows = 100
	// slackTableColumns is the most columns of a data_table.
	slackTableColumns = 20
	// tableChars bounds the text of a table's cells: Slack allows 10,000
	// characters across a table's cells, and across all tables of a
	// message; the margin is for how Slack counts numbers, which it does
	// not say.
	tableChars = 9000
	// tableCellChars bounds one cell's text; longer text is cut.
	tableCellChars = 200
	// tablePageSize is how many rows a table shows a page (Slack: 1–100).
	tablePageSize = 10
	// tableReadBytes bounds the bytes of a CSV parsed for its table; the
	// records past it are counted, not read.
	tableReadBytes = 1 << 20
)

// Bounds of what the bot shows of files.
const (
	// altTextChars bounds an image's alt text (Slack allows 1,000).
	altTextChars = 1000
	// cardFileNotes bounds the produced files a card lists one by one.
	cardFileNotes = 8
	// queryCardRows bounds the rows of a query card's table (the query
	// keeps a few dozen for it); queryDebugColumns the columns its debug
	// line names with their types.
	queryCardRows     = 20
	queryDebugColumns = 12
)

// Charts: a chart a run draws with the chart helper is shown as a
// data_visualization block when it fits Slack's documented limits
// (docs.slack.dev, data visualization block); otherwise its PNG is posted.
const (
	// ChartsPerMessage is the most data_visualization blocks a message
	// may hold.
	ChartsPerMessage = 2
	// chartTitleChars bounds a chart's title, and an axis label.
	chartTitleChars = 50
	// chartLabelChars bounds a category, a series' name and a pie
	// segment's label.
	chartLabelChars = 20
	// chartPoints is the most points of a series (and so categories).
	chartPoints = 20
	// chartSeries is the most series of a chart, and segments of a pie.
	chartSeries = 6
)
