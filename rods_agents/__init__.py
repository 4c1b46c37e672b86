"""Synthesis stages of RODS, one module per stage, each a LangGraph node ``verb_noun(state, runtime)``.

- ``profile_extraction.extract_profile``: execute the seed, build Φ (call graph, WL hash, information structure);
- ``plan_sampling.sample_plan``: new entities, values, methods and initial_config with the seed's profile;
- ``coherence_rewrite.rewrite_turns``: user turns anchored to one goal, category rules applied;
- ``execution_orchestrator.execute_plan``: run the plan on fresh instances, classify errors;
- ``config_patch.patch_config``: rule-table (or LLM) config patches, bounded, recorded;
- ``verdict.judge_variant``: executable, isomorphic, obtainable, new, not contaminated.

Shared helpers: ``catalog`` (API catalog), ``tracing`` (per-call traces and write sets),
``value_sources`` (information structure), ``obtainability`` (unique hints for discovered values,
recipes for composed ones, shared by the rewrite and the verdict), ``contamination`` (near-duplicate guard),
``outputs`` (files, HF dataset).

Run settings and types (leaf modules): ``context`` (``SynthesisContext``, validated), ``outcome``
(``Verdict``, ``SampleResult``, LLM usage), ``llm_schemas`` (strict LLM answer schemas),
``prompt_files`` (the one ``prompts/`` loader). LLM backbone: ``llm_client`` (ChatOpenAI, preflight,
transport errors), ``prompting`` (prompt rendering), ``llm_backbone`` (the four LLM stages, above
the offline ones), ``llm_nodes`` (offline stage + LLM as one node), ``judge`` (the critique stage).
Wiring lives in ``graphs.synthesis``; nothing here imports ``graphs``.
"""
