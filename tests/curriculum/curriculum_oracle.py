"""A transcription of DeepSpeed 0.16's deepspeed/runtime/data_pipeline/curriculum_scheduler.py (CurriculumScheduler:
the asserts of __init__, get_difficulty for fixed_discrete / fixed_linear / fixed_root, update_difficulty), the
reference the tests compare zerotron's scheduler with. The custom schedule (a Python callback) is left out."""
import math

WARNING = ("When using seqlen metric, the difficulty_step for curriculum learning has to be multiple of 8 (for FP16 "
           "data) or 16 (for INT8 data) to enable NVIDIA Tensor Core acceleration.")


class CurriculumScheduler:
    def __init__(self, config):
        self.state = {}
        self.warned = False
        assert "min_difficulty" in config, "Curriculum learning requires the config 'min_difficulty'"
        assert "max_difficulty" in config, "Curriculum learning requires the config 'max_difficulty'"
        assert "schedule_type" in config, "Curriculum learning requires the config 'schedule_type'"
        self.state["min_difficulty"] = config["min_difficulty"]
        self.state["max_difficulty"] = config["max_difficulty"]
        self.state["current_difficulty"] = config["min_difficulty"]
        self.state["schedule_type"] = config["schedule_type"]
        t = config["schedule_type"]
        if t == "fixed_discrete":
            sc = config["schedule_config"]
            assert "difficulty" in sc, \
                "Curriculum learning with fixed_discrete schedule requires the schedule_config 'difficulty'"
            assert "max_step" in sc, \
                "Curriculum learning with fixed_discrete schedule requires the schedule_config 'max_step'"
            assert len(sc["max_step"]) > 0
            assert len(sc["difficulty"]) > 0
            assert len(sc["difficulty"]) == len(sc["max_step"]) + 1
            self.state["schedule_config"] = sc
        elif t in ("fixed_root", "fixed_linear"):
            sc = config["schedule_config"]
            assert "total_curriculum_step" in sc, \
                f"Curriculum learning with {t} schedule requires the schedule_config 'total_curriculum_step'"
            assert "difficulty_step" in sc, \
                f"Curriculum learning with {t} schedule requires the schedule_config 'difficulty_step'"
            if t == "fixed_root":
                assert "root_degree" in sc, \
                    "Curriculum learning with fixed_root schedule requires the schedule_config 'root_degree'"
            if sc["difficulty_step"] % 8 != 0:
                self.warned = True
            self.state["schedule_config"] = sc
        else:
            raise RuntimeError('Unsupported curriculum schedule type')

    def __fixed_discrete_get_difficulty(self, global_steps):
        s_state = self.state["schedule_config"]
        if global_steps > s_state["max_step"][-1]:
            return s_state["difficulty"][-1]
        for i in range(len(s_state["max_step"])):
            if global_steps <= s_state["max_step"][i]:
                return s_state["difficulty"][i]

    def __fixed_root_get_difficulty(self, global_steps, root_degree=None):
        s_state = self.state["schedule_config"]
        if root_degree is None:
            root_degree = s_state["root_degree"]
        next_difficulty = (float(global_steps) / s_state["total_curriculum_step"])**(1.0 / root_degree)
        next_difficulty = math.floor(next_difficulty *
                                     (self.state["max_difficulty"] - self.state["min_difficulty"]) +
                                     self.state["min_difficulty"])
        next_difficulty -= (next_difficulty % s_state["difficulty_step"])
        next_difficulty = min(next_difficulty, self.state["max_difficulty"])
        return next_difficulty

    def get_difficulty(self, global_steps):
        t = self.state["schedule_type"]
        if t == "fixed_discrete":
            return self.__fixed_discrete_get_difficulty(global_steps)
        if t == "fixed_linear":
            return self.__fixed_root_get_difficulty(global_steps, 1)
        if t == "fixed_root":
            return self.__fixed_root_get_difficulty(global_steps)
        raise RuntimeError('Unsupported curriculum schedule type')

    def update_difficulty(self, global_steps):
        if self.state["current_difficulty"] < self.state["max_difficulty"]:
            self.state["current_difficulty"] = self.get_difficulty(global_steps)
        return self.state["current_difficulty"]


def lengths(config, first, last):
    """The sequence lengths of iterations first..last as Megatron-DeepSpeed's loop sees them: a fresh scheduler
    (also after a resume: its state is not checkpointed) stepped with iteration + 1 before each iteration."""
    s = CurriculumScheduler(config)
    return [s.update_difficulty(t) for t in range(first, last + 1)]


if __name__ == "__main__":  # curriculum_oracle.py CONFIG.json FIRST LAST: the lengths, one a line
    import json
    import sys
    cfg = json.load(open(sys.argv[1]))["curriculum_learning"]
    for d in lengths(cfg, int(sys.argv[2]), int(sys.argv[3])):
        print(d)
