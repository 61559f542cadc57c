package toolspec

// CommandSucceeded starts run_command's result for a command that exited with status 0; a goal's
// check passes exactly when its result starts with it (the tools' commandResult writes it).
const CommandSucceeded = "The command finished with exit status 0 (success)."
