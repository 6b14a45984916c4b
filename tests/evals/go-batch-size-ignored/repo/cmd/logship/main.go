// Command logship ships log lines read from stdin (or an archive) to a collector.
package main

import (
	"bufio"
	"flag"
	"log"
	"os"
	"time"

	"example.com/logship/internal/app"
	"example.com/logship/internal/config"
	"example.com/logship/internal/ship"
)

func main() {
	confPath := flag.String("config", "/etc/logship.conf", "configuration file")
	replay := flag.String("replay", "", "re-send this archived log and exit")
	flag.Parse()
	f, err := os.Open(*confPath)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.Parse(f)
	if err != nil {
		log.Fatal(err)
	}
	sink := &ship.MemorySink{} // the HTTP sink lives in the collector client, not in this repo
	if *replay != "" {
		archive, err := os.Open(*replay)
		if err != nil {
			log.Fatal(err)
		}
		n, err := app.Replay(cfg, archive, sink)
		log.Printf("replayed %d lines in %d batches (error: %v)", n, len(sink.Batches), err)
		return
	}
	p := app.NewLivePipeline(cfg, sink)
	for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
		if err := p.Push(sc.Text(), time.Now()); err != nil {
			log.Print(err)
		}
	}
	p.Shipper.Flush()
}
