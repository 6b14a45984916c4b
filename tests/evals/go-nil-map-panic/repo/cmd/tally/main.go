// Command tally summarizes an access log read from stdin.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"example.com/tally/report"
)

func main() {
	top := flag.Int("top", 5, "how many paths to list")
	hourly := flag.Bool("hourly", false, "also count requests per hour")
	flag.Parse()

	var lines []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	summary := report.Summarize(lines)
	fmt.Print(report.Render(summary, *top))
	if *hourly {
		for _, e := range report.ByHour(lines).Top(24) {
			fmt.Printf("  %s:00  %d\n", e.Key, e.Count)
		}
	}
}
