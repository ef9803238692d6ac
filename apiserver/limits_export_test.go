package apiserver

// HistoryBytes returns what the server's watch history costs (its
// storage's HistoryBytes), for TestAttacks' child.
func HistoryBytes(s *Server) int64 { return s.store.HistoryBytes() }
