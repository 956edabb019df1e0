package numcheck_test

import (
	"fmt"
	"os"

	"github.com/sandpiper-bot/sandpiper/agent/numcheck"
)

func ExampleCheck() {
	src := numcheck.Sources{
		Question: "What share of revenue comes from the West region?",
		Runs: []numcheck.Run{{
			Code:   "g = df.groupby('region')['revenue'].sum()\nprint(g['West'], g.sum(), g['West'] / g.sum())",
			Output: "93007.3 342980.75 0.27117377436710425\n",
		}},
	}
	answer := "West brings in **27.1%** of revenue ($93,007.30 of $342,980.75), " +
		"up from 24.9% in 2022; with North it makes up 43.7%."
	nums := numcheck.Check(answer, src)
	for _, n := range nums {
		fmt.Printf("%s (%v)\n", n.Text, n.Value)
	}
	if os.Getenv("SANDPIPER_NUMBER_CHECK") != "off" {
		fmt.Println(":warning: " + numcheck.Warning(nums))
	}
	// Output:
	// 24.9% (24.9)
	// 43.7% (43.7)
	// :warning: not found in any run's output: 24.9%, 43.7%
}
