package tokenizer

// vocabulary is a list of common English words. Load keeps those that are a
// single token with a leading space in the chosen encoding, so texts built
// from them have exactly one token per word.
var vocabulary = []string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
	"not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
	"you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more",
	"when", "will", "would", "who", "so", "no", "she", "other", "its", "may", "these", "what", "them",
	"than", "some", "him", "time", "into", "only", "do", "could", "new", "about", "two", "first",
	"then", "also", "after", "any", "like", "should", "people", "very", "between", "many", "over",
	"such", "where", "most", "through", "made", "before", "must", "well", "much", "our", "years",
	"each", "those", "work", "how", "even", "life", "state", "world", "same", "under", "last",
	"might", "great", "year", "since", "against", "right", "while", "three", "used", "place", "long",
	"house", "water", "little", "system", "number", "part", "still", "good", "day", "point", "form",
	"small", "back", "general", "power", "group", "found", "given", "order", "large", "light",
	"both", "case", "high", "public", "city", "development", "during", "without", "however", "home",
	"around", "another", "within", "social", "country", "important", "because", "information",
	"market", "model", "level", "service", "value", "energy", "history", "process", "table", "river",
	"music", "story", "field", "plant", "simple", "paper", "study", "green", "money", "night",
	"space", "school", "control", "change", "earth", "garden", "window", "mountain", "sound",
	"engine", "signal", "memory", "cache", "token", "block", "queue", "stream", "server", "client",
	"answer", "question", "reason", "result", "figure", "detail", "method", "design", "report",
	"market", "summer", "winter", "spring", "autumn", "morning", "evening", "letter", "island",
	"forest", "animal", "family", "friend", "season", "bridge", "castle", "village", "harbor",
	"silver", "golden", "simple", "quiet", "bright", "strong", "gentle", "careful", "happy", "early",
}
