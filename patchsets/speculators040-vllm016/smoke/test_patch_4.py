"""patch-4: Scheduler(..., block_size=<effective KV block size>).

vLLM 0.16's Scheduler.__init__ requires block_size. The value must be the
effective cache_config.block_size (x DCP x PCP), as EngineCore computes it, not
the generator's VLLM_BLOCK_SIZE constant: on CUDA the platform rewrites
cache_config.block_size during VllmConfig construction (64 for FlashMLA, i.e.
DeepSeek-V3 / Kimi-K2.5). That GPU-only rewrite is emulated here.
"""

MLA_BLOCK_SIZE = 64


def test_scheduler_gets_effective_block_size(make_generator, gen_mod, monkeypatch):
    real_create = gen_mod.VllmHiddenStatesGenerator._create_vllm_config

    def create_like_cuda_mla(self, **kwargs):
        cfg = real_create(self, **kwargs)
        # what CudaPlatform.check_and_update_config does for FlashMLA (GPU only)
        cfg.cache_config.block_size = MLA_BLOCK_SIZE
        return cfg

    monkeypatch.setattr(
        gen_mod.VllmHiddenStatesGenerator, "_create_vllm_config", create_like_cuda_mla
    )
    # Unpatched: TypeError: Scheduler.__init__() missing 1 required positional
    # argument: 'block_size'
    gen = make_generator(tensor_parallel_size=2)

    assert isinstance(gen.scheduler, gen_mod.Scheduler)
    assert gen.scheduler.block_size == MLA_BLOCK_SIZE
    assert gen.scheduler.block_size == gen.vllm_config.cache_config.block_size
    assert (
        gen.scheduler.kv_cache_config.kv_cache_groups[0].kv_cache_spec.block_size
        == MLA_BLOCK_SIZE
    )
