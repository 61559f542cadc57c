package contract

// RefusalAlreadyAnswered is the error type a session's validator gives its refusal of an answer to
// an escalation that was already answered, or of a decision on a call already decided, so a client
// tells that case apart by type instead of by the refusal's wording.
const RefusalAlreadyAnswered = "AlreadyAnswered"
