package store

import (
	"log/slog"

	bolt "go.etcd.io/bbolt"
)

type boltTx = bolt.Tx

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
