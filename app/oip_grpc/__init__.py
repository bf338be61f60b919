"""The Open Inference Protocol v2 over gRPC (KServe / Triton's GRPCInferenceService), served by every
front-end worker beside HTTP: ``messages`` (the protocol's messages), ``service`` (the methods, thin
adapters over app.pipeline and app.v2codec), ``server`` (the listening side)."""
