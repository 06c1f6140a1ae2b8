"""Rep-CodeGen ("Code-Generated Graph Representations Using Multiple LLM Agents for Material Properties
Prediction", ICML 2025, OpenReview lvvMwGUam6): constraint checkers for crystal-graph representations, a
sandbox for generated code, LLM clients (OpenAI-compatible and a scripted offline agent), the evolutionary
loop, and the property-prediction models. The public names are exported by :mod:`icml25.materials`.
"""
