"""Read-only analysis of a task: what its calls need, produce and leave to the assistant."""
