"""patch-9: SchedulerConfig(..., async_scheduling=False).

vLLM 0.16's VllmConfig.__post_init__ turns async_scheduling=None into True for
the mp/uni executor backends; the generator drives the synchronous Scheduler
class itself (never AsyncScheduler, never update_from_output), so the config it
builds must say so. Built through the generator's own _create_vllm_config.
"""


def test_vllm_config_is_synchronous(create_config, gen_mod):
    for tp in (1, 2):  # "uni" and "mp" executor backends
        cfg = create_config(tensor_parallel_size=tp)
        # Unpatched (silent): async_scheduling is True, so workers run the
        # async-output path (WorkerProc async_output_copy_thread).
        sched = cfg.scheduler_config
        assert sched.async_scheduling is False, (
            f"tp={tp}: async_scheduling={sched.async_scheduling!r} "
            f"(executor backend {cfg.parallel_config.distributed_executor_backend!r})"
        )
        if hasattr(sched, "get_scheduler_cls"):  # vLLM 0.16
            assert sched.get_scheduler_cls() is gen_mod.Scheduler
        else:  # 0.11: a string, switched to AsyncScheduler only when async is on
            assert "AsyncScheduler" not in str(sched.scheduler_cls)
