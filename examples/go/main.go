// Asks idd for numbers from Go with franz-go, the common pure-Go Kafka client, as it comes: its
// default partitioner (Kafka's murmur2 for keyed records, so requests land on their sequence's home
// partition) and its default batch compression (snappy, then lz4, whenever that makes a batch
// smaller). Requests are JSON; replies are read from a reply topic the client creates.
//
// Args: brokers (comma list), sequences (comma list), requests, requests in flight, [request topic].
// Prints one line per number: sequence TAB number TAB sendNanos TAB replyNanos (CLOCK_MONOTONIC,
// comparable with the other example clients on one machine); a summary goes to stderr.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

type reply struct {
	RequestID string `json:"requestId"`
	Status    string `json:"status"`
	Ranges    []struct {
		First json.Number `json:"first"`
		Last  json.Number `json:"last"`
	} `json:"ranges"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func monotonicNanos() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "go: "+format+"\n", a...)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 5 {
		fail("usage: client <brokers> <sequences> <requests> <in flight> [request topic]")
	}
	brokers := strings.Split(os.Args[1], ",")
	sequences := strings.Split(os.Args[2], ",")
	requests, err1 := strconv.Atoi(os.Args[3])
	inFlight, err2 := strconv.Atoi(os.Args[4])
	if err1 != nil || err2 != nil || requests < 0 || inFlight < 1 {
		fail("requests and in flight must be numbers")
	}
	requestTopic := "idd.requests"
	if len(os.Args) > 5 {
		requestTopic = os.Args[5]
	}
	ctx := context.Background()
	replyTopic := "idd-go-replies-" + newID()

	client, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(replyTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fail("%v", err)
	}
	defer client.Close()
	admin := kadm.NewClient(client)
	if _, err := admin.CreateTopic(ctx, 1, -1, nil, replyTopic); err != nil {
		fail("creating %s: %v", replyTopic, err)
	}
	defer func() { _, _ = admin.DeleteTopic(context.Background(), replyTopic) }()

	type pending struct {
		sequence string
		sentAt   int64
	}
	waiting := map[string]pending{}
	sent, numbers, failures := 0, 0, 0
	started := time.Now()
	deadline := time.Now().Add(120 * time.Second)
	for (sent < requests || len(waiting) > 0) && time.Now().Before(deadline) {
		for sent < requests && len(waiting) < inFlight {
			sequence := sequences[sent%len(sequences)]
			id := newID()
			value, _ := json.Marshal(map[string]any{"requestId": id, "sequence": sequence, "count": 1})
			waiting[id] = pending{sequence, monotonicNanos()}
			client.Produce(ctx, &kgo.Record{
				Topic: requestTopic,
				Key:   []byte(sequence),
				Value: value,
				Headers: []kgo.RecordHeader{
					{Key: "kafka_correlationId", Value: []byte(id)},
					{Key: "kafka_replyTopic", Value: []byte(replyTopic)},
				},
			}, func(_ *kgo.Record, err error) {
				if err != nil {
					fmt.Fprintf(os.Stderr, "go: send failed: %v\n", err)
				}
			})
			sent++
		}
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := client.PollFetches(pollCtx)
		cancel()
		received := monotonicNanos()
		fetches.EachRecord(func(r *kgo.Record) {
			var rep reply
			if err := json.Unmarshal(r.Value, &rep); err != nil {
				fmt.Fprintf(os.Stderr, "go: unreadable reply: %v\n", err)
				return
			}
			p, ok := waiting[rep.RequestID]
			if !ok {
				return
			}
			delete(waiting, rep.RequestID)
			if rep.Status != "OK" {
				failures++
				if rep.Error != nil {
					fmt.Fprintf(os.Stderr, "%s: %s: %s\n", p.sequence, rep.Error.Code, rep.Error.Message)
				}
				return
			}
			for _, rg := range rep.Ranges {
				first, _ := rg.First.Int64()
				last, _ := rg.Last.Int64()
				for n := first; n <= last; n++ {
					fmt.Printf("%s\t%d\t%d\t%d\n", p.sequence, n, p.sentAt, received)
					numbers++
				}
			}
		})
	}
	seconds := time.Since(started).Seconds()
	fmt.Fprintf(os.Stderr, "go: %d requests, %d numbers, %d failures, %d unanswered in %.1fs (%.0f requests/s)\n",
		requests, numbers, failures, len(waiting), seconds, float64(requests)/seconds)
	if failures > 0 || len(waiting) > 0 {
		os.Exit(1)
	}
}
