"""patch-3: get_kv_cache_config_from_groups() without kv_cache_specs=.

Runs the generator's real __init__ (real Scheduler, real kv_cache_utils) with
fake GPU workers (see conftest) and checks the KV cache config it computed and
sent to every worker.
"""


def test_kv_cache_config_from_groups(make_generator, gen_mod, monkeypatch):
    seen = []
    real = gen_mod.get_kv_cache_config_from_groups

    def spy(*args, **kwargs):
        # Unpatched: TypeError: get_kv_cache_config_from_groups() got an
        # unexpected keyword argument 'kv_cache_specs'
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr(gen_mod, "get_kv_cache_config_from_groups", spy)
    gen = make_generator(tensor_parallel_size=2)

    assert len(seen) == 1
    kv = seen[0]
    assert kv.num_blocks > 1000
    assert len(kv.kv_cache_groups) == 1
    assert len(kv.kv_cache_groups[0].layer_names) == 4
    assert gen.vllm_config.cache_config.num_gpu_blocks == kv.num_blocks
    assert gen.scheduler.kv_cache_config is kv
    assert [w.kv_cache_config for w in gen.fake_workers] == [kv, kv]
