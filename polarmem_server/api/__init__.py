"""The gRPC API layer: servicer, server, interceptor, metrics, configuration."""
