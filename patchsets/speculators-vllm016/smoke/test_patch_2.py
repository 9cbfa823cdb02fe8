"""patch-2: SchedulerConfig(..., is_encoder_decoder=False).

vLLM 0.16's SchedulerConfig has a required InitVar `is_encoder_decoder`; the
generator's _create_vllm_config must build a VllmConfig (real ModelConfig from
a tiny local model directory, DeviceConfig(device="cpu") because there is no GPU).
"""


def test_create_vllm_config_builds(create_config, gen_mod):
    # Unpatched: pydantic_core.ValidationError: 1 validation error for
    # SchedulerConfig / is_encoder_decoder / Field required
    cfg = create_config(tensor_parallel_size=2)

    assert isinstance(cfg, gen_mod.VllmConfig)
    assert cfg.model_config.is_encoder_decoder is False
    assert cfg.scheduler_config.max_num_seqs == gen_mod.MAX_NUM_SEQS
    assert cfg.scheduler_config.max_num_batched_tokens == max(
        gen_mod.MIN_MAX_BATCHED_TOKENS, cfg.model_config.max_model_len
    )
    assert cfg.parallel_config.worker_extension_cls.endswith(
        "custom_worker.HiddenStatesWorkerExtension"
    )
