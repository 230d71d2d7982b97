// Package messages is a team's business on hookinbox with a provider of
// its own (package slack): one row per Slack message in a table of the
// team's own migration, that never goes backwards, whatever order Slack's
// deliveries and retries come in. A message posted, edited and deleted is
// one row, last the deleted tombstone; a late delivery of an older change
// writes nothing. It imports only hookinbox's public API.
package messages

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/slack-go/slack/slackevents"

	"github.com/hookinbox/hookinbox"

	"example.com/slack-events/slack"
)

//go:embed migrations/*.sql
var files embed.FS

// Migrations are the team's own migrations (the folder's files).
func Migrations() fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the folder is embedded above
	}
	return sub
}

// Name is the handler's name (its metrics label).
const Name = "slack-messages"

// Table is the team's table and what hookinbox's roles may do with it: the
// worker writes it, the operator reads it but never who wrote what
// (personal data: only the payload reader role reads those).
var Table = hookinbox.Table{Name: "slack_messages", Worker: []string{"SELECT", "INSERT", "UPDATE"}, Private: []string{"user_id", "text"}}

// Projection is the table as a projection that never goes backwards: a
// change is written only when its version (the change's event_ts) is newer
// than the stored one, and a deleted message stays deleted.
var Projection = hookinbox.Projection{Table: "slack_messages", Key: []string{"team_id", "channel", "ts"},
	TouchedColumn: "updated_at", TerminalColumn: "deleted", TerminalValue: true}

// New is the team's whole program: hookinbox's processes and CLI with the
// Slack provider, the messages handler and its migrations.
func New() *hookinbox.App {
	app := hookinbox.New(hookinbox.WithProvider(slack.Provider{}), hookinbox.WithMigrations("slack", Migrations(), Table))
	app.Handle(slack.Name, "message", Messages{}, hookinbox.Name(Name))
	return app
}

// Messages keeps the slack_messages row of each message an event names.
type Messages struct{}

// Handle writes the message's state as the event has it, if it is newer
// than the row's. Subtypes that are no message's content (channel_join,
// …) are ignored.
func (Messages) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	outer, err := slackevents.ParseEvent(ev.Payload, slackevents.OptionNoVerifyToken())
	if err != nil {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("read the event: %w", err))
	}
	msg, ok := outer.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("a %s event is no message", outer.InnerEvent.Type))
	}
	row, err := rowOf(ev, msg)
	if errors.Is(err, errNoContent) {
		return hookinbox.Result{Ignored: true, Note: "a " + msg.SubType + " message: no content to keep"}, nil
	}
	if err != nil {
		return hookinbox.Result{}, hookinbox.Permanent(err)
	}
	key := hookinbox.Key("slack-message", ev.Key.Account, msg.Channel, row["ts"].(string))
	return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		wrote, err := tx.WriteNewer(ctx, Projection, row)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !wrote {
			return hookinbox.Result{BusinessKey: key, Note: "the row holds a newer state of message " + row["ts"].(string) + ": nothing written"}, nil
		}
		return hookinbox.Result{BusinessKey: key, Note: note(msg.SubType) + " message " + row["ts"].(string)}, nil
	})
}

// errNoContent: a subtype that changes no message's content.
var errNoContent = errors.New("no message content")

// rowOf is the row a message event writes: the message's own fields, the
// version of the change (its event_ts).
func rowOf(ev *hookinbox.Event, m *slackevents.MessageEvent) (hookinbox.Row, error) {
	version, err := Version(m.EventTimeStamp)
	if err != nil {
		return nil, err
	}
	row := hookinbox.Row{"team_id": ev.Key.Account, "channel": m.Channel, "provider_version": version}
	switch m.SubType {
	case "", "bot_message", "me_message", "file_share", "thread_broadcast":
		row["ts"], row["thread_ts"], row["user_id"], row["text"] = m.TimeStamp, nullable(m.ThreadTimeStamp), nullable(m.User), m.Text
	case "message_changed":
		if m.Message == nil {
			return nil, errors.New("a message_changed event without its message")
		}
		row["ts"], row["thread_ts"], row["user_id"], row["text"] = m.Message.Timestamp, nullable(m.Message.ThreadTimestamp), nullable(m.Message.User), m.Message.Text
		if m.Message.Edited != nil {
			row["edited_ts"] = m.Message.Edited.Timestamp
		}
	case "message_deleted":
		// The tombstone forgets the text.
		row["ts"], row["deleted"], row["text"] = m.DeletedTimeStamp, true, nil
	default:
		return nil, errNoContent
	}
	if row["ts"] == "" || m.Channel == "" {
		return nil, fmt.Errorf("a %q message event names no message (ts) or channel", m.SubType)
	}
	return row, nil
}

func note(subtype string) string {
	switch subtype {
	case "message_changed":
		return "edited"
	case "message_deleted":
		return "deleted"
	}
	return "posted"
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Version reads a Slack timestamp ("1355517523.000005": seconds and a
// six-digit sequence) as one increasing integer, the microseconds it
// spells: a change's event_ts orders the changes of one message.
func Version(ts string) (int64, error) {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s < 0 || len(frac) > 6 {
		return 0, fmt.Errorf("the Slack timestamp %q is not seconds.micros", ts)
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil || f < 0 {
			return 0, fmt.Errorf("the Slack timestamp %q is not seconds.micros", ts)
		}
	}
	return s*1_000_000 + f, nil
}
