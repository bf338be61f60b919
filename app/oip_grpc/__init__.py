"""The Open Inference Protocol v2 over gRPC (KServe / Triton's GRPCInferenceService) and gRPC's standard
health check, served by every front-end worker beside HTTP: ``messages`` (the message classes),
``service`` (the methods, thin adapters over app.pipeline, app.v2codec and app.v2metadata), ``server``
(the listening side)."""
