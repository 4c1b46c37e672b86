"""The LLM backbone: clients, strict answer schemas, prompt rendering and the structured calls."""
