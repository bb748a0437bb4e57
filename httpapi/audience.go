package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/projections"
)

// subscriberView is a subscriber as the API shows it: a subscriber with no
// locale or attributes has them null; a cleared kind is absent.
type subscriberView struct {
	SubscriberID string              `json:"subscriberId"`
	Contacts     map[string][]string `json:"contacts"`
	Locale       *string             `json:"locale"`
	Attributes   json.RawMessage     `json:"attributes"`
	Timezone     *string             `json:"timezone"`
	CreatedAt    string              `json:"createdAt"`
	UpdatedAt    string              `json:"updatedAt"`
}

func viewSubscriber(s projections.Subscriber) subscriberView {
	contacts := s.Contacts
	if contacts == nil {
		contacts = map[string][]string{}
	}
	return subscriberView{SubscriberID: s.SubscriberID, Contacts: contacts, Locale: s.Locale,
		Attributes: s.Attributes, Timezone: s.Timezone, CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt)}
}

type topicView struct {
	Key             string  `json:"key"`
	Name            *string `json:"name"`
	Description     *string `json:"description"`
	SubscriberCount int     `json:"subscriberCount"`
	CreatedAt       string  `json:"createdAt"`
	UpdatedAt       string  `json:"updatedAt"`
}

func viewTopic(t projections.Topic) topicView {
	return topicView{Key: t.Key, Name: t.Name, Description: t.Description, SubscriberCount: t.SubscriberCount,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
}

type subscriptionView struct {
	SubscriberID string `json:"subscriberId"`
	TopicKey     string `json:"topicKey"`
	CreatedAt    string `json:"createdAt"`
}

// topicMemberView is one item of GET /v1/topics/{key}/subscribers.
type topicMemberView struct {
	SubscriberID string `json:"subscriberId"`
	CreatedAt    string `json:"createdAt"`
}

// subscribedTopicView is one item of GET /v1/subscribers/{id}/subscriptions.
type subscribedTopicView struct {
	TopicKey  string `json:"topicKey"`
	CreatedAt string `json:"createdAt"`
}

// createdOr answers 201 for a created resource, else 200.
func createdOr(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// subscriberRequest is PUT /v1/subscribers/{externalId}: kept raw, so an
// omitted field, null and a value are told apart (see
// control.SubscriberInput).
type subscriberRequest struct {
	Contacts   map[string]json.RawMessage `json:"contacts"`
	Locale     json.RawMessage            `json:"locale"`
	Attributes json.RawMessage            `json:"attributes"`
	Timezone   json.RawMessage            `json:"timezone"`
}

func (s *Server) putSubscriber(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	var in subscriberRequest
	if err := decode(w, r, &in); err != nil {
		return err
	}
	sub, created, err := s.deps.Control.UpsertSubscriber(r.Context(), tenantOf(r.Context()), id, control.SubscriberInput(in))
	return reply(w, createdOr(created), sub, err, viewSubscriber)
}

func (s *Server) getSubscriber(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "externalId", s.deps.Control.Subscriber, viewSubscriber)
}

func (s *Server) listSubscribers(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, func(p projections.Page) ([]projections.Subscriber, string, error) {
		return s.deps.Control.Subscribers(tenantOf(r.Context()), p)
	}, viewSubscriber)
}

func (s *Server) deleteSubscriber(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	erase := false
	if v := r.URL.Query().Get("erase"); v != "" {
		if erase, err = strconv.ParseBool(v); err != nil {
			var probs apierr.Problems
			probs.Add("erase", "must be true or false")
			return probs.Err()
		}
	}
	del := s.deps.Control.DeleteSubscriber
	if erase {
		del = s.deps.Control.EraseSubscriber
	}
	return noContent(w, del(r.Context(), tenantOf(r.Context()), id))
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	return servePage(s, w, r, func(p projections.Page) ([]projections.Subscription, string, error) {
		return s.deps.Control.SubscriberSubscriptions(tenantOf(r.Context()), id, p)
	}, func(s projections.Subscription) subscribedTopicView {
		return subscribedTopicView{TopicKey: s.TopicKey, CreatedAt: ts(s.CreatedAt)}
	})
}

// subscriptionVars reads {externalId} and {topicKey}.
func subscriptionVars(r *http.Request) (id, topic string, err error) {
	if id, err = pathVar(r, "externalId"); err != nil {
		return "", "", err
	}
	topic, err = pathVar(r, "topicKey")
	return id, topic, err
}

func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) error {
	id, topic, err := subscriptionVars(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	sub, created, err := s.deps.Control.Subscribe(r.Context(), tenantOf(r.Context()), id, topic)
	if err != nil {
		return err
	}
	writeJSON(w, createdOr(created), subscriptionView{SubscriberID: sub.SubscriberID, TopicKey: sub.TopicKey,
		CreatedAt: ts(sub.CreatedAt)})
	return nil
}

func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request) error {
	id, topic, err := subscriptionVars(r)
	if err != nil {
		return err
	}
	return noContent(w, s.deps.Control.Unsubscribe(r.Context(), tenantOf(r.Context()), id, topic))
}

// topicRequest is PUT /v1/topics/{key}, raw like subscriberRequest.
type topicRequest struct {
	Name        json.RawMessage `json:"name"`
	Description json.RawMessage `json:"description"`
}

func (s *Server) putTopic(w http.ResponseWriter, r *http.Request) error {
	key, err := pathVar(r, "key")
	if err != nil {
		return err
	}
	var in topicRequest
	if err := decode(w, r, &in); err != nil {
		return err
	}
	t, created, err := s.deps.Control.UpsertTopic(r.Context(), tenantOf(r.Context()), key, control.TopicInput(in))
	return reply(w, createdOr(created), t, err, viewTopic)
}

func (s *Server) getTopic(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "key", s.deps.Control.Topic, viewTopic)
}

func (s *Server) listTopics(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, func(p projections.Page) ([]projections.Topic, string, error) {
		return s.deps.Control.Topics(tenantOf(r.Context()), p)
	}, viewTopic)
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	return removeByPath(w, r, "key", s.deps.Control.DeleteTopic)
}

func (s *Server) listTopicSubscribers(w http.ResponseWriter, r *http.Request) error {
	key, err := pathVar(r, "key")
	if err != nil {
		return err
	}
	return servePage(s, w, r, func(p projections.Page) ([]projections.Subscription, string, error) {
		return s.deps.Control.TopicSubscribers(tenantOf(r.Context()), key, p)
	}, func(s projections.Subscription) topicMemberView {
		return topicMemberView{SubscriberID: s.SubscriberID, CreatedAt: ts(s.CreatedAt)}
	})
}
