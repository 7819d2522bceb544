// Package jsstream makes sure a JetStream stream exists with the settings
// onceledger gives it, writing to the server only when they differ.
//
// Every worker provisions its streams when it starts. An update whose
// settings are those the stream already has is not free: the server
// rewrites the stream's configuration (in a cluster, a round through the
// meta leader) while other workers may be creating consumers on it. So a
// stream is created when missing, updated when a setting onceledger gives it
// changed, and otherwise left alone.
package jsstream

import (
	"context"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// Ensure returns the stream want.Name with want's settings: created when
// missing, updated when one of the settings want gives differs, untouched
// otherwise. A zero setting in want is the server's default and is not
// compared.
//
// A change of Replicas is an update like any other: the server moves the
// stream to the new count of servers, its messages and its consumers with
// it (a consumer whose Replicas is 0 has the stream's). When the servers
// cannot hold the replicas asked for, the error is a *ReplicasError, which
// names the count and the size of the cluster.
func Ensure(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := ensure(ctx, js, want)
	if err != nil {
		return nil, explainReplicas(ctx, js.Conn(), want, err)
	}
	return s, nil
}

func ensure(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, want)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return s, err
		}
		// Another worker created it meanwhile, perhaps with other
		// settings: compare as below.
		s, err = js.Stream(ctx, want.Name)
	}
	if err != nil {
		return nil, err
	}
	if Same(s.CachedInfo().Config, want) {
		return s, nil
	}
	return js.UpdateStream(ctx, want)
}

// Same tells whether have has every setting want gives (its non-zero ones,
// of those onceledger sets).
func Same(have, want jetstream.StreamConfig) bool {
	return (want.Description == "" || have.Description == want.Description) &&
		slices.Equal(have.Subjects, want.Subjects) &&
		have.Storage == want.Storage &&
		have.Retention == want.Retention &&
		(want.MaxAge == 0 || have.MaxAge == want.MaxAge) &&
		(want.MaxBytes == 0 || have.MaxBytes == want.MaxBytes) &&
		(want.MaxMsgSize == 0 || have.MaxMsgSize == want.MaxMsgSize) &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) &&
		(want.Replicas == 0 || have.Replicas == want.Replicas) &&
		have.Discard == want.Discard &&
		(want.MaxMsgsPerSubject == 0 || have.MaxMsgsPerSubject == want.MaxMsgsPerSubject) &&
		have.DiscardNewPerSubject == want.DiscardNewPerSubject &&
		sameTransform(have.SubjectTransform, want.SubjectTransform)
}

func sameTransform(have, want *jetstream.SubjectTransformConfig) bool {
	if have == nil || want == nil {
		return have == want
	}
	return *have == *want
}
