"""Support code shared by the tests and the benchmarks: start the service in a subprocess, free ports,
scrape /metrics, find MNIST, build request bodies and images. The service never imports it."""
