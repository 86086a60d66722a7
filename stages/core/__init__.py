"""The primitives a stage may import: the contract, the compiler, the GPU and TMA helpers, and
`KernelStage`/`Launch`. Nothing here imports a tool (stages/tools/), the registry or a stage."""
