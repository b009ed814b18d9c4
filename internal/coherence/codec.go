package coherence

import "encoding/json"

func encode(m *message) ([]byte, error)       { return json.Marshal(m) }
func decode(data []byte, m *message) error    { return json.Unmarshal(data, m) }
func encodeReply(r *reply) ([]byte, error)    { return json.Marshal(r) }
func decodeReply(data []byte, r *reply) error { return json.Unmarshal(data, r) }
