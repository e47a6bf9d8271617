package main

// The tail mode (-tail): how far the tail of a small inference sits above
// the tail of the server's cheapest answer, measured in one run. The
// closed loop of -c connections alternates between GET /v2/health/live
// and the scenario's infer requests, round by round, so both endpoints see
// the same neighbours on the machine; the latencies of every round are
// pooled per endpoint, and the report gives infer p50/p90/p99, health p99
// and the ratio infer p99 / health p99. What is left between the two is
// the cost of the infer path itself: its handoffs, allocations, collector
// and timers. A phase ends when the requests in flight at its end are
// answered (those are not counted), so no two phases overlap.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// tailBar is the ratio of infer p99 to health p99 the serving path is held
// to.
const tailBar = 2.0

type tailConfig struct {
	on     bool
	rounds int
	warm   time.Duration
	health string
	b      string
}

func (t *tailConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&t.on, "tail", false, "alternate -c connections between GET /v2/health/live and the infer requests for -d in all, and print infer p50/p90/p99, health p99 and their ratio")
	fs.IntVar(&t.rounds, "tail-rounds", 10, "with -tail: rounds of health then infer, each endpoint -d/(2×rounds) a round")
	fs.DurationVar(&t.warm, "tail-warm", time.Second, "with -tail: load on both endpoints before the first round, not counted")
	fs.StringVar(&t.health, "tail-health", "", "with -tail: the health URL (default: /v2/health/live on the infer URL's host)")
	fs.StringVar(&t.b, "tail-b", "", "with -tail: a second server's infer URL (before/after builds), measured in the same rounds: its health, its infer after the first server's (the run then takes 2×-d)")
}

// tailReport is what a -tail run measured.
type tailReport struct {
	Connections  int     `json:"connections"`
	Rounds       int     `json:"rounds"`
	PhaseSeconds float64 `json:"phase_seconds"` // one endpoint, one round
	tailSide
	Bar float64   `json:"bar"`
	B   *tailSide `json:"b,omitempty"` // -tail-b's server
}

// tailSide is one server's two endpoints, pooled over the rounds.
type tailSide struct {
	Infer  *report `json:"infer"`
	Health *report `json:"health"`
	Ratio  float64 `json:"p99_ratio"` // infer p99 / health p99
}

// tailTarget is one server's two scenarios and the runs made of each.
type tailTarget struct {
	infer, health *scenario
	is, hs        []*report
}

func (t *tailTarget) side() *tailSide {
	s := &tailSide{Infer: pooled(t.is), Health: pooled(t.hs)}
	if p := s.Health.LatencyMS.P99; p > 0 {
		s.Ratio = s.Infer.LatencyMS.P99 / p
	}
	return s
}

func runTail(c *config, stdout io.Writer) error {
	t := &c.tail
	if c.grpc != "" || c.rate > 0 {
		return fmt.Errorf("-tail measures the HTTP closed loop: no -grpc, no -rate")
	}
	if c.conns < 1 || t.rounds < 1 || c.duration <= 0 || t.warm < 0 {
		return fmt.Errorf("-c, -d and -tail-rounds must be positive")
	}
	phase := c.duration / time.Duration(2*t.rounds)
	if phase <= 0 {
		return fmt.Errorf("-d %s is too short for %d rounds", c.duration, t.rounds)
	}
	infer, err := newScenario(c)
	if err != nil {
		return err
	}
	health, err := healthScenario(infer.url, t.health)
	if err != nil {
		return err
	}
	targets := []*tailTarget{{infer: infer, health: health}}
	if t.b != "" {
		b := *infer
		b.url = t.b
		bh, err := healthScenario(t.b, "")
		if err != nil {
			return err
		}
		targets = append(targets, &tailTarget{infer: &b, health: bh})
	}
	for _, tg := range targets {
		for _, sc := range []*scenario{tg.infer, tg.health} {
			if err := checkHost(sc.url, c.anyHost); err != nil {
				return err
			}
		}
	}
	rep, err := tailLoad(context.Background(), c, targets, phase)
	if err != nil {
		return err
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(stdout)
	return nil
}

// healthScenario is GET /v2/health/live on the host of inferURL, or GET
// of explicit when set.
func healthScenario(inferURL, explicit string) (*scenario, error) {
	u := explicit
	if u == "" {
		p, err := url.Parse(inferURL)
		if err != nil {
			return nil, err
		}
		u = (&url.URL{Scheme: p.Scheme, Host: p.Host, Path: "/v2/health/live"}).String()
	}
	sc := &scenario{name: "health", method: http.MethodGet, url: u, headers: http.Header{}}
	if _, err := sc.request(context.Background()); err != nil {
		return nil, err
	}
	return sc, nil
}

// tailLoad warms every endpoint, then runs the rounds (each target's
// health, then its infer, target after target) and pools each endpoint's
// latencies.
func tailLoad(ctx context.Context, c *config, targets []*tailTarget, phase time.Duration) (*tailReport, error) {
	pc := *c
	pc.pid, pc.finish = 0, true
	if c.tail.warm > 0 {
		pc.duration = c.tail.warm / 2
		for _, tg := range targets {
			for _, sc := range []*scenario{tg.health, tg.infer} {
				if pc.duration > 0 {
					if _, err := load(ctx, &pc, sc); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	pc.duration = phase
	for range c.tail.rounds {
		for _, tg := range targets {
			h, err := load(ctx, &pc, tg.health)
			if err != nil {
				return nil, err
			}
			i, err := load(ctx, &pc, tg.infer)
			if err != nil {
				return nil, err
			}
			tg.hs, tg.is = append(tg.hs, h), append(tg.is, i)
		}
	}
	rep := &tailReport{Connections: c.conns, Rounds: c.tail.rounds, PhaseSeconds: phase.Seconds(), tailSide: *targets[0].side(), Bar: tailBar}
	if len(targets) > 1 {
		rep.B = targets[1].side()
	}
	return rep, nil
}

// pooled is one report of the answers of several runs of one scenario.
func pooled(runs []*report) *report {
	r := &report{Scenario: runs[0].Scenario, Method: runs[0].Method, URL: runs[0].URL, BodyBytes: runs[0].BodyBytes,
		Connections: runs[0].Connections, Status: map[string]int{}, Errors: map[string]int{}}
	var all []time.Duration
	for _, run := range runs {
		all = append(all, run.lat...)
		r.Seconds += run.Seconds
		for k, n := range run.Status {
			r.Status[k] += n
		}
		for k, n := range run.Errors {
			r.Errors[k] += n
		}
	}
	slices.Sort(all)
	r.lat, r.Requests = all, len(all)
	if r.Seconds > 0 {
		r.PerSecond = float64(len(all)) / r.Seconds
	}
	r.LatencyMS = latencies{P50: ms(quantile(all, 0.50)), P90: ms(quantile(all, 0.90)), P99: ms(quantile(all, 0.99)), Max: ms(quantile(all, 1))}
	return r
}

func (t *tailReport) print(w io.Writer) {
	fmt.Fprintf(w, "tail: %d connections, %d rounds of %.1f s on each endpoint, alternated\n", t.Connections, t.Rounds, t.PhaseSeconds)
	t.tailSide.print(w, "", t.Bar)
	if t.B != nil {
		t.B.print(w, "b: ", t.Bar)
	}
}

func (s *tailSide) print(w io.Writer, prefix string, bar float64) {
	for _, e := range []struct {
		name string
		r    *report
	}{{"infer ", s.Infer}, {"health", s.Health}} {
		l := e.r.LatencyMS
		errs := 0
		for _, n := range e.r.Errors {
			errs += n
		}
		fmt.Fprintf(w, "%s%s  %s %s: %d answered (%.0f/s) %s, %d errors %s\n", prefix, e.name, e.r.Method, e.r.URL, e.r.Requests, e.r.PerSecond, counts(e.r.Status), errs, counts(e.r.Errors))
		fmt.Fprintf(w, "%s        p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n", prefix, l.P50, l.P90, l.P99, l.Max)
	}
	verdict := "within"
	if s.Ratio > bar || s.Ratio == 0 {
		verdict = "NOT within"
	}
	fmt.Fprintf(w, "%sratio   infer p99 / health p99 = %.2fx (%s the %.0fx bar)\n", prefix, s.Ratio, verdict, bar)
}
