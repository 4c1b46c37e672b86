"""The graph nodes in pipeline order (profile -> plan -> rewrite -> execute -> patch -> verdict -> judge) and their state."""
