"""The synthesis stages of RODS and what they stand on, in five sub-packages (imports point down only).

- ``stages``: one module per graph node, in pipeline order, each holding its offline body and its
  LLM step: ``profile_extraction`` -> ``plan_sampling`` -> ``coherence_rewrite`` ->
  ``execution_orchestrator`` -> ``config_patch`` -> ``verdict`` (rule checks) -> ``judge`` (the LLM
  judge); ``state`` holds the graph's state types beside them.
- ``llm``: the LLM backbone: ``client`` (ChatOpenAI, preflight, transport errors), ``schemas``
  (strict answer schemas), ``prompting`` (prompt rendering), ``backbone`` (the structured calls),
  ``accounting`` (calls and tokens per stage).
- ``variation``: the offline variation algorithms: ``plan`` (the :class:`Plan` model); the offline plan,
  ``anchored_plan``, drawn by ``draw``, ``entity_swaps``, ``method_swap``, ``changes``, ``state_resample``,
  ``rederive`` and ``plan_checks``; ``seed_anchor`` (the plan carried into the seed's words), ``value_kinds``;
  the re-wording of turns (``transplant`` and the modules it names); ``config_rules`` (the patch rule table).
- ``analysis``: read-only analysis of a task: ``catalog``, ``tracing``, ``value_sources``,
  ``obtainability``, ``information_structure``, ``profile``, ``execution`` (error kinds, outcome
  flips), ``variant_quality``, ``contamination``.
- ``run``: run types: ``context`` (``SynthesisContext``), ``outcome`` (``Verdict``,
  ``SampleResult``), ``runtime`` (progress events, timings, seeded RNGs), ``outputs`` (files, HF dataset).

Wiring lives in ``graphs.synthesis``; nothing here imports ``graphs`` or ``trainer``.
"""
