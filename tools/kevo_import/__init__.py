"""The importers behind `kevo import`: KernelBench problem files and FlashInfer-Bench definitions to kevo contracts."""
