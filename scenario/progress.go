package scenario

// Progress is told how far a long preparation of prompts went: the step
// ("read data.json", "count tokens"), how much of it is done and its total
// (0 when unknown), in unit ("bytes", "prompts"). It is called from one
// goroutine at a time, often (every few hundred lines or a few times a
// second): the receiver decides what to show and when.
type Progress func(step string, done, total int64, unit string)
