"""Run types of one synthesis run: settings, outcomes, progress events, output files."""
