"""RODS tasks in other people's trainers: a TRL ``GRPOTrainer`` of your own (:mod:`trainer.integrations.trl`) and verl
(:mod:`trainer.integrations.verl`), on the data ``rods export`` writes."""
