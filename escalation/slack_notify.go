package escalation

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/internal/contract"
)

// slackHistoryWindow is how many recent messages the notifier reads to find an earlier post.
const slackHistoryWindow = 200

// SlackNotifier posts an escalation notice with answer buttons to one Slack channel.
//
// Idempotency has two layers. In one process, posted escalation IDs are remembered, so a retried
// activity skips Slack. Across a crash, every notice carries message metadata
// (event_type keel_escalation, payload escalation_id), and Notify reads the channel's newest
// 200 messages with include_all_metadata before posting; a notice found there is not posted
// again. That read needs the channels:history (or groups:history) scope and a channel ID; when
// Slack refuses it (missing scope, unknown channel) Notify posts anyway, because one notice
// twice beats none. A network failure of the read is returned, so the activity retries.
type SlackNotifier struct {
	API *slack.Client
	// Channel is the channel ID (C…) to post in.
	Channel string

	sent sentSet
}

// Name identifies the channel in logs and in EscalationPolicy.Channels.
func (s *SlackNotifier) Name() string { return contract.ChannelSlack }

// Notify posts the notice once per escalation ID.
func (s *SlackNotifier) Notify(ctx context.Context, e contract.Escalation) error {
	if s.sent.has(noticeKey(e)) {
		return nil
	}
	found, err := s.alreadyPosted(ctx, e)
	if err != nil {
		return err
	}
	if !found {
		fallback := slackFallback(e)
		_, _, err = s.API.PostMessageContext(ctx, s.Channel,
			slack.MsgOptionText(fallback, false),
			slack.MsgOptionBlocks(SlackBlocks(e)...),
			slack.MsgOptionMetadata(slack.SlackMetadata{
				EventType:    SlackMetadataEventType,
				EventPayload: map[string]any{"escalation_id": e.ID, "workflow_id": e.WorkflowID},
			}),
			slack.MsgOptionDisableLinkUnfurl())
		if err != nil {
			return fmt.Errorf("posting escalation %s to slack channel %s: %w", e.ID, s.Channel, err)
		}
	}
	s.sent.add(noticeKey(e))
	return nil
}

// alreadyPosted looks for a notice of this session's escalation in the channel's recent history.
func (s *SlackNotifier) alreadyPosted(ctx context.Context, e contract.Escalation) (bool, error) {
	id := e.ID
	hist, err := s.API.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID:          s.Channel,
		Limit:              slackHistoryWindow,
		IncludeAllMetadata: true,
	})
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading slack channel %s for escalation %s: %w", s.Channel, id, err)
	}
	for _, m := range hist.Messages {
		p := m.Metadata.EventPayload
		if m.Metadata.EventType == SlackMetadataEventType && p["escalation_id"] == id && p["workflow_id"] == e.WorkflowID {
			return true, nil
		}
	}
	return false, nil
}

// slackFallback is the notice's plain text, shown in notifications and where blocks are not.
func slackFallback(e contract.Escalation) string {
	if IsApproval(e) {
		return fmt.Sprintf("Keel session %s waits for approval of %s", e.WorkflowID, e.Approval.Tool)
	}
	return fmt.Sprintf("Keel session %s needs a person: %s", e.WorkflowID, Reason(e.Reason))
}
