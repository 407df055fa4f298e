#!/usr/bin/env python3
"""test_harness: evaluate_zeroshot --tasks (lm-evaluation-harness multiple-choice tasks; docs/evaluate.md) against an
independent NumPy transcription of the harness's scoring (lm-evaluation-harness 0.4.9): each task's prompt and
choices (lm_eval/tasks piqa, arc, openbookqa, hellaswag/utils.py, super_glue/boolq, cb, copa/utils.py, multirc,
rte, wic, wsc/preprocess_wsc.py, glue/rte, anli, webqs/utils.py, ...), the few-shot sampler (Python's
random.Random(seed).sample), HFLM._encode_pair, log-likelihoods from the logits that ckpt_logits dumps from the same
checkpoint, acc / acc_norm by character length and mean_stderr, cb's multi-class F1 and webqs's exact_match. Also:
the sampler against Python's random on 300 draws, the prompts exactly, and the bad inputs (file, line, field, flag
named).

With --mpi: DP=2, TP=2 and PP=2 runs equal one process (the requests spread over replicas and summed back).

Usage: test_harness.py [--mpi] EVALUATE_ZEROSHOT EVAL_TOOL PRETRAIN_GPT PREPROCESS_DATA CKPT_LOGITS"""
import ast
import collections
import json
import math
import os
import random
import re
import shutil
import string
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy not found (apt-get install python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalkit import parse_argv, BU, EOD, MPIRUN, VOCAB, check, summary, tiny_gpt  # noqa: E402

MPI, (EVAL, TOOL, PRETRAIN, PREPROCESS, LOGITS) = parse_argv()


def run(cmd, ok=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    out = p.stdout.decode("utf-8", "replace")
    if ok and p.returncode != 0:
        print(out[-3000:])
        raise SystemExit("FAIL: %s exited %d" % (" ".join(cmd[:3]), p.returncode))
    return p.returncode, out


# ---- the character-level GPT-2 vocabulary (evalkit.py): encoding and decoding ------------------------------------


def tok_encode(text):
    return [VOCAB.get(BU[b], 0) for b in text.encode("utf-8")]


# ---- the harness's task definitions, transcribed -------------------------------------------------------------
def hellaswag_preprocess(text):
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    text = text.replace("  ", " ")
    return text


def doc_of(task, d):
    """(doc_to_text, doc_to_choice, doc_to_target) of one raw document."""
    if task == "piqa":
        return "Question: " + d["goal"] + "\nAnswer:", [d["sol1"], d["sol2"]], d["label"]
    if task in ("arc_easy", "arc_challenge"):
        return ("Question: " + d["question"] + "\nAnswer:", d["choices"]["text"],
                d["choices"]["label"].index(d["answerKey"]))
    if task == "openbookqa":
        return d["question_stem"], d["choices"]["text"], d["choices"]["label"].index(d["answerKey"].lstrip())
    if task == "hellaswag":
        ctx = d["ctx_a"] + " " + d["ctx_b"].capitalize()
        return (hellaswag_preprocess(d["activity_label"] + ": " + ctx), [hellaswag_preprocess(e) for e in d["endings"]],
                int(d["label"]))
    if task == "boolq":
        return d["passage"] + "\nQuestion: " + d["question"] + "?\nAnswer:", ["no", "yes"], int(d["label"])
    if task == "race":  # preprocess_race.py (problems: a Python literal string, or a JSON list)
        probs = ast.literal_eval(d["problems"]) if isinstance(d["problems"], str) else d["problems"]
        opt = lambda p: p["options"][{"A": 0, "B": 1, "C": 2, "D": 3}[p["answer"]]]
        text = "Article: " + d["article"] + "\n\n"
        for p in probs[:-1]:
            if p["question"][-6:] == "  _  .":
                text += p["question"][-5:] + opt(p) + "\n"
            else:
                text += "Question: " + p["question"] + "\n" + "Answer: " + opt(p) + "\n"
        text += probs[-1]["question"]
        return text, [probs[-1]["options"][i] for i in range(4)], {"A": 0, "B": 1, "C": 2, "D": 3}[probs[-1]["answer"]]
    if task == "wikitext":  # loglikelihood_rolling: the detokenized page, no choices
        return wikitext_detokenizer(d["page"]), [], 0
    if task == "c4":  # preprocess_c4.c4_detokenizer: wikitext_detokenizer's rules on "text"
        return wikitext_detokenizer(d["text"]), [], 0
    if task in ("pile_10k", "paloma_ptb"):  # doc_to_target "text", paloma_utils.doc_to_target: str(text)
        return d["text"], [], 0
    if task in LAMBADA:  # output_type loglikelihood: the one "choice" is doc_to_target, " " + the last word
        cloze = " ____. ->" if task.endswith("_cloze_yaml") else ""  # lambada_openai_cloze.yaml
        return " ".join(d["text"].split(" ")[:-1]) + cloze, [" " + d["text"].split(" ")[-1]], 0
    if task.startswith("arithmetic_"):  # arithmetic_1dc.yaml: loglikelihood of "{{completion}}" after "{{context}}"
        return d["context"], [d["completion"]], 0
    if task == "social_iqa":  # siqa.yaml: doc_to_target "{{ (label|int) - 1 }}"
        return ("Q: " + d["context"] + " " + d["question"] + "\nA:", [d["answerA"], d["answerB"], d["answerC"]],
                int(d["label"]) - 1)
    if task == "commonsense_qa":  # commonsense_qa/default.yaml; gold = choices.index(answerKey)
        t = d["choices"]["text"]
        return ("Question: " + d["question"].strip() + "".join("\n%s. %s" % (l, t[i]) for i, l in enumerate("ABCDE")) +
                "\nAnswer:", list("ABCDE"), "ABCDE".index(d["answerKey"]))
    if task.startswith("blimp_"):  # blimp/_template_yaml: doc_to_text "" (the context [EOD]), good then bad
        return "", [d["sentence_good"], d["sentence_bad"]], 0
    if task in ("anli_r1", "anli_r2", "anli_r3"):  # anli_r1.yaml: doc_to_target renders the label's word
        ch = ["True", "Neither", "False"]
        return (d["premise"] + "\nQuestion: " + d["hypothesis"] + " True, False, or Neither?\nAnswer:", ch,
                ch.index(["True", "Neither", "False"][d["label"]]))
    if task == "cb":
        return (d["premise"] + "\nQuestion: " + d["hypothesis"] + ". True, False, or Neither?\nAnswer:",
                ["True", "False", "Neither"], d["label"])
    if task == "rte":  # glue/rte
        return d["sentence1"] + "\nQuestion: " + d["sentence2"] + " True or False?\nAnswer:", ["True", "False"], d["label"]
    if task == "sglue_rte":  # super_glue/rte
        return d["premise"] + "\nQuestion: " + d["hypothesis"] + " True or False?\nAnswer:", ["True", "False"], d["label"]
    if task == "copa":  # super_glue/copa/utils.py; gold = choices.index(doc_to_target)
        conv = lambda c: c[0].lower() + c[1:]
        choices = [" " + conv(d["choice1"]), " " + conv(d["choice2"])]
        target = " " + conv(d["choice1"] if d["label"] == 0 else d["choice2"])
        text = d["premise"].strip()[:-1] + " " + {"cause": "because", "effect": "therefore"}[d["question"]]
        return text, choices, choices.index(target)
    if task == "multirc":  # the YAML's doc_to_choice: a Jinja template rendered, then ast.literal_eval
        lit = "['''{{answer}}\\nIs the answer correct? yes''', '''{{answer}}\\nIs the answer correct? no''']"
        return (d["paragraph"] + "\nQuestion: " + d["question"] + "\nAnswer:",
                ast.literal_eval(lit.replace("{{answer}}", d["answer"])), d["label"])
    if task == "wic":
        return ("Sentence 1: " + d["sentence1"] + "\nSentence 2: " + d["sentence2"] + "\nQuestion: Is the word '" +
                d["sentence1"][d["start1"]:d["end1"]] + "' used in the same way in the two sentences above?\nAnswer:",
                ["no", "yes"], d["label"])
    if task == "wsc":  # preprocess_wsc.default_doc_to_text
        raw = d["text"]
        pre = " ".join(raw.split()[:d["span2_index"]])
        post = raw[len(pre) + len(d["span2_text"]) + 1:]
        passage = general_detokenize(pre + " *{}*".format(d["span2_text"]) + post)
        text = ("Passage: " + passage + "\n" + 'Question: In the passage above, does the pronoun "*' + d["span2_text"] +
                '*" refer to "*' + d["span1_text"] + '*"?\n' + "Answer:")
        return text, ["no", "yes"], d["label"]
    if task == "webqs":  # webqs/utils.py: every answer left by _remove_prefixes is gold (exact_match)
        aliases = sorted(d["answers"])
        ret = [aliases[0]]
        for a in aliases[1:]:
            if not a.startswith(ret[-1]):
                ret.append(a)
        return "Question: " + d["question"] + "\nAnswer:", ret, 0
    if task == "nq_open":  # nq_open.yaml: doc_to_target "{{answer}}", the list
        return "Q: " + d["question"] + "?\nA:", d["answer"], 0
    if task == "triviaqa":  # triviaqa/default.yaml: doc_to_target "{{answer.aliases}}" is the list (literal_eval)
        return "Question: " + d["question"] + "?\nAnswer:", d["answer"]["aliases"], 0
    if task == "gsm8k":  # gsm8k.yaml: doc_to_target "{{answer}}", the whole worked answer
        return "Question: " + d["question"] + "\nAnswer:", [d["answer"]], 0
    if task == "gsm8k_cot":  # gsm8k-cot.yaml: the text after the last "####", or the YAML sample's target
        target = d["answer"].split("####")[-1].strip() if "answer" in d else d["target"]
        return "Q: " + d["question"] + "\nA:", [target], 0
    if task == "gsm8k_cot_zeroshot":  # gsm8k-cot-zeroshot.yaml: doc_to_target "{{answer}}"
        return "Q: " + d["question"] + "\nA: Let's think step by step.", [d["answer"]], 0
    if task == "record":  # super_glue/record/util.py (process_docs: entities and answers sorted and unique)
        ent, ans = record_sets(d)
        initial, *highlights = d["passage"].strip().split("\n@highlight\n")
        text = initial + "\n\n" + "".join("  - %s.\n" % h for h in highlights)
        choices = [("  - " + d["query"]).replace("@placeholder", e) for e in ent]
        return text, choices, ent.index(ans[0])  # doc_to_target: the first answer's choice
    if task.startswith("xcopa_"):  # xcopa/utils.py: the language's connector, choices without a leading space
        conv = lambda c: c[0].lower() + c[1:]
        text = d["premise"].strip()[:-1] + " " + XCOPA_CONNECTOR[task[6:]][d["question"]]
        return text, [conv(d["choice1"]), conv(d["choice2"])], d["label"]
    if task.startswith("paws_"):  # paws-x/paws_<lang>.yaml: doc_to_text '', the YAML's choices after process_docs
        p = paws_process(task, d)
        right, words = PAWS_WORDS[task[5:]]
        return "", [p["sentence1"] + ", %s? %s, " % (right, wd) + p["sentence2"] for wd in words], d["label"]
    if task.startswith("xnli_"):  # xnli_<lang>.yaml: doc_to_text '' (no context), the YAML's rendered choices
        right, words = XNLI_WORDS[task[5:]]
        return "", [d["premise"] + ", %s? %s, " % (right, wd) + d["hypothesis"] for wd in words], d["label"]
    if task == "swag":  # swag.yaml
        return d["startphrase"], [d["ending0"], d["ending1"], d["ending2"], d["ending3"]], d["label"]
    if task.startswith(("storycloze_", "xstorycloze_")):  # storycloze_2016.yaml, xstorycloze/default_ar.yaml
        return (" ".join([d["input_sentence_1"], d["input_sentence_2"], d["input_sentence_3"], d["input_sentence_4"]]),
                [d["sentence_quiz1"], d["sentence_quiz2"]], d["answer_right_ending"] - 1)
    if task.startswith("headqa_"):  # headqa_en.yaml: "{{answers|map(attribute='atext')|list}}", "{{ra - 1}}"
        return "Question: " + d["qtext"] + "\nAnswer:", [a["atext"] for a in d["answers"]], d["ra"] - 1
    if task.startswith("qa4mre_"):  # qa4mre_2011.yaml: "{{correct_answer_id|int - 1}}"
        return (d["document_str"].strip() + "\nQuestion: " + d["question_str"] + "\nAnswer:",
                d["answer_options"]["answer_str"], int(d["correct_answer_id"]) - 1)
    if task == "wsc273":  # wsc273/default.yaml after utils.process_doc: the options after text[:pronoun_loc]
        p = wsc273_process(d)
        return None, [p["text"][:p["pronoun_loc"]] + o for o in p["options"][:2]], p["label"]
    if task == "winogrande" or task.startswith("xwinograd_"):  # preprocess_winogrande.py, xwinograd/utils.py
        i = d["sentence"].index("_")
        return None, [d["sentence"][:i] + o for o in (d["option1"], d["option2"])], {"1": 0, "2": 1}[d["answer"]]
    if task in GLUE_LIKE:  # glue/*/default.yaml, mc_taco/default.yaml: a Jinja template, fixed choices, label
        template, choices = GLUE_LIKE[task]
        return re.sub(r"\{\{(\w+)\}\}", lambda m: d[m.group(1)], template), choices, d["label"]
    if task in ("mnli", "mnli_mismatch"):  # glue/mnli/utils.py
        text = "{}\nQuestion: {} True, False or Neither?\nAnswer:".format(
            d["premise"], d["hypothesis"].strip() + ("" if d["hypothesis"].strip().endswith(".") else "."))
        return text, ["True", "Neither", "False"], d["label"]
    if task in ("truthfulqa_mc1", "truthfulqa_mc2"):  # truthfulqa_mc1.yaml's Jinja: prompt_qa + question
        targets = d["mc1_targets" if task == "truthfulqa_mc1" else "mc2_targets"]
        return TRUTHFULQA_QA + "\n\nQ: " + d["question"] + "\nA:", targets["choices"], 0
    if task == "sciq":  # sciq.yaml: doc_to_choice "{{[distractor1, distractor2, distractor3, correct_answer]}}"
        return (d["support"].lstrip() + "\nQuestion: " + d["question"] + "\nAnswer:",
                [d["distractor1"], d["distractor2"], d["distractor3"], d["correct_answer"]], 3)
    if task == "prost":  # corypaik_prost.yaml
        return (d["context"] + "\nQuestion: " + d["ex_question"] + "\nAnswer:", [d["A"], d["B"], d["C"], d["D"]],
                d["label"])
    if task == "logiqa":  # logiqa/utils_logiqa.py
        prompt = "Passage: " + d["context"] + "\n" + "Question: " + d["question"] + "\nChoices:\n"
        for choice, option in zip(["a", "b", "c", "d"], d["options"]):
            prompt += f"{choice.upper()}. {option}\n"
        return prompt + "Answer:", d["options"], ["a", "b", "c", "d"].index(d["label"].strip())
    if task == "mathqa":  # mathqa.yaml, mathqa/utils.py
        choices = [c[4:].rstrip(" ,") for c in re.findall(r"[abcd] \) .*?, |e \) .*?$", d["options"])]
        return "Question: " + d["Problem"] + "\nAnswer:", choices, ["a", "b", "c", "d", "e"].index(d["correct"])
    if task == "pubmedqa":  # pubmedqa.yaml, preprocess_pubmedqa.py; gold = choices.index(final_decision)
        return ("Abstract: {}\nQuestion: {}\nAnswer:".format("\n".join(d["CONTEXTS"]), d["QUESTION"]),
                ["yes", "no", "maybe"], ["yes", "no", "maybe"].index(d["final_decision"]))
    if task.startswith("mmlu_continuation_"):  # mmlu/continuation: the answers' texts, every choice, gold the index
        return "Question: " + d["question"].strip() + "\nAnswer:", d["choices"], int(d["answer"])
    if task.startswith("mmlu_"):  # mmlu/default/_default_template_yaml; a letter answer: choices.index(answer)
        c, a = d["choices"], d["answer"]
        return ("%s\nA. %s\nB. %s\nC. %s\nD. %s\nAnswer:" % (d["question"].strip(), c[0], c[1], c[2], c[3]),
                ["A", "B", "C", "D"], "ABCD".index(a) if isinstance(a, str) else a)
    raise ValueError(task)


# lm-eval 0.4.9 mmlu/default: each subject's tag (its group), from the 57 mmlu_<subject>.yaml files; the groups'
# group_alias (_mmlu_<group>.yaml); each subject's description
MMLU_GROUP_OF = dict(
    [(s, "stem") for s in "abstract_algebra anatomy astronomy college_biology college_chemistry "
     "college_computer_science college_mathematics college_physics computer_security conceptual_physics "
     "electrical_engineering elementary_mathematics high_school_biology high_school_chemistry "
     "high_school_computer_science high_school_mathematics high_school_physics high_school_statistics "
     "machine_learning".split()] +
    [(s, "other") for s in "business_ethics clinical_knowledge college_medicine global_facts human_aging management "
     "marketing medical_genetics miscellaneous nutrition professional_accounting professional_medicine "
     "virology".split()] +
    [(s, "social_sciences") for s in "econometrics high_school_geography high_school_government_and_politics "
     "high_school_macroeconomics high_school_microeconomics high_school_psychology human_sexuality "
     "professional_psychology public_relations security_studies sociology us_foreign_policy".split()] +
    [(s, "humanities") for s in "formal_logic high_school_european_history high_school_us_history "
     "high_school_world_history international_law jurisprudence logical_fallacies moral_disputes moral_scenarios "
     "philosophy prehistory professional_law world_religions".split()])
MMLU_ALIAS = {"mmlu_stem": "stem", "mmlu_other": "other", "mmlu_social_sciences": "social sciences",
              "mmlu_humanities": "humanities"}


def mmlu_description(task):  # the continuation tasks' (mmlu/continuation): "questions", the subject after the prefix
    if task.startswith("mmlu_continuation_"):
        return "The following are questions (with answers) about %s.\n\n" % task[18:].replace("_", " ")
    return "The following are multiple choice questions (with answers) about %s.\n\n" % task[5:].replace("_", " ")


# truthfulqa_mc1.yaml's prompt_qa, as PyYAML reads the double-quoted scalar (escaped line breaks joined)
TRUTHFULQA_QA = (
    "Q: What is human life expectancy in the United States?\nA: Human life expectancy in the United States is 78 "
    "years.\n\nQ: Who was president of the United States in 1955?\nA: Dwight D. Eisenhower was president of the United "
    "States in 1955.\n\nQ: Which party did he belong to?\nA: He belonged to the Republican Party.\n\nQ: What is the "
    "square root of banana?\nA: I have no comment.\n\nQ: How does a telescope work?\nA: Telescopes use lenses or "
    "mirrors to focus light and make objects appear closer.\n\nQ: Where were the 1992 Olympics held?\nA: The 1992 "
    "Olympics were held in Barcelona, Spain.")
GLUE_LIKE = {  # lm-eval 0.4.9's YAMLs: doc_to_text, doc_to_choice
    "cola": ("{{sentence}}\nQuestion: Does this sentence make sense?\nAnswer:", ["no", "yes"]),
    "sst2": ("{{sentence}}\nQuestion: Is this sentence positive or negative?\nAnswer:", ["negative", "positive"]),
    "mrpc": ("Sentence 1: {{sentence1}}\nSentence 2: {{sentence2}}\nQuestion: Do both sentences mean the same "
             "thing?\nAnswer:", ["no", "yes"]),
    "qnli": ("{{question}}\n{{sentence}}\nQuestion: Does this response answer the question?\nAnswer:", ["yes", "no"]),
    "qqp": ("Question 1: {{question1}}\nQuestion 2: {{question2}}\nQuestion: Do both questions ask the same "
            "thing?\nAnswer:", ["no", "yes"]),
    "wnli": ("{{sentence1}}\nQuestion: {{sentence2}} True or False?\nAnswer:", ["False", "True"]),
    "mc_taco": ("{{sentence}}\nQuestion: {{question}}\nAnswer: {{answer}}\nPlausible:", ["no", "yes"]),
}


XCOPA_CONNECTOR = {  # xcopa/utils.py (the languages in the fixtures)
    "et": {"cause": "sest", "effect": "seet\u00f5ttu"},
    "zh": {"cause": "\u56e0\u4e3a", "effect": "\u6240\u4ee5"},
    "th": {"cause": "\u0e40\u0e1e\u0e23\u0e32\u0e30", "effect": "\u0e14\u0e31\u0e07\u0e19\u0e31\u0e49\u0e19"},
    "ht": {"cause": "poukisa", "effect": "donk sa"}, "id": {"cause": "karena", "effect": "maka"},
    "it": {"cause": "perch\u00e9", "effect": "quindi"}, "qu": {"cause": "imataq", "effect": "chaymi"},
    "sw": {"cause": "kwa sababu", "effect": "kwa hiyo"},
    "ta": {"cause": "\u0b95\u0bbe\u0bb0\u0ba3\u0bae\u0bbe\u0b95", "effect": "\u0b8e\u0ba9\u0bb5\u0bc7"},
    "tr": {"cause": "\u00e7\u00fcnk\u00fc", "effect": "bu y\u00fczden"},
    "vi": {"cause": "b\u1edfi v\u00ec", "effect": "v\u00ec v\u1eady"}}


XNLI_WORDS = {"en": ("right", ["Yes", "Also", "No"]),  # xnli/xnli_en.yaml, xnli_zh.yaml, xnli_ur.yaml's doc_to_choice
              "zh": ("\u6b63\u786e", ["\u662f\u7684", "\u6240\u4ee5", "\u4e0d\u662f\u7684"]),
              "ur": ("\u0635\u062d\u06cc\u062d", ["\u062c\u06cc \u06c1\u0627\u06ba",
                                                 "\u0627\u0633 \u0644\u0626\u06d2", "\u0646\u06c1\u06cc\u06ba"])}


PAWS_WORDS = {"en": ("right", ["No", "Yes"]),  # paws-x/paws_en.yaml, paws_ja.yaml's doc_to_choice
              "ja": ("\u3067\u3059\u306d", ["\u3044\u3044\u3048", "\u306f\u3044"])}


def paws_dropped(task, doc):  # paws-x/utils.py process_docs_paraphrases's filter (en, de, es, fr)
    return task in ("paws_en", "paws_de", "paws_es", "paws_fr") and (doc["sentence1"] in [None, ""] or
                                                                    doc["sentence2"] in [None, ""])


def kept(task, docs):
    return [d for d in docs if not paws_dropped(task, d)]


def paws_process(task, doc):  # paws-x/utils.py process_docs_paraphrases's _process_doc (en, de, es, fr)
    if task not in ("paws_en", "paws_de", "paws_es", "paws_fr"):
        return doc
    doc = dict(doc)
    doc["sentence1"] = general_detokenize(doc["sentence1"]).strip()
    doc["sentence2"] = general_detokenize(doc["sentence2"]).strip()
    if doc["sentence1"].endswith((".", ",", ";")):
        doc["sentence1"] = doc["sentence1"][:-1]
    doc["sentence2"] = doc["sentence2"][0].lower() + doc["sentence2"][1:]
    return doc


def delimiter(task):  # target_delimiter: arithmetic's and PAWS-X's ""
    return "" if task.startswith(("arithmetic_", "paws_")) else " "


def wsc273_process(doc):  # wsc273/utils.py process_doc
    doc = json.loads(json.dumps(doc))
    upper_pronouns = ["A", "An", "The", "She", "He", "It", "They", "My", "His", "Her", "Their"]

    def normalize(option):
        if doc["pronoun"].lower() in ["my", "his", "her", "our", "their"]:
            option += "'s"
        pronoun = option.split()[0]
        start_of_sentence = doc["text"][doc["pronoun_loc"] - 2] == "."
        if not start_of_sentence and pronoun in upper_pronouns:
            return option.replace(pronoun, pronoun.lower())
        return option

    doc["text"] = doc["text"].replace("  ", " ")
    doc["options"][0] = normalize(doc["options"][0])
    doc["options"][1] = normalize(doc["options"][1])
    return doc


def general_detokenize(string):  # lm_eval.utils
    string = string.replace(" n't", "n't")
    string = string.replace(" )", ")")
    string = string.replace("( ", "(")
    string = string.replace('" ', '"')
    string = string.replace(' "', '"')
    string = re.sub(r" (['.,])", r"\1", string)
    return string


def cb_multi_f1(golds, preds):  # super_glue/cb/aggregate.py with sklearn's binary f1_score (0 when undefined)
    f = []
    for c in range(3):
        tp = sum(1 for g, p in zip(golds, preds) if g == c and p == c)
        fp = sum(1 for g, p in zip(golds, preds) if g != c and p == c)
        fn = sum(1 for g, p in zip(golds, preds) if g == c and p != c)
        f.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(f))


def record_sets(d):
    return sorted(set(d["entities"])), sorted(set(d["answers"]))


def squad_normalize(s):  # transformers.data.metrics.squad_metrics.normalize_answer
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", s)
    return " ".join(s.split())


def squad_f1(a_gold, a_pred):  # squad_metrics.compute_f1 (get_tokens: [] for an empty string)
    gold = squad_normalize(a_gold).split() if a_gold else []
    pred = squad_normalize(a_pred).split() if a_pred else []
    same = sum((collections.Counter(gold) & collections.Counter(pred)).values())
    if len(gold) == 0 or len(pred) == 0:
        return int(gold == pred)
    if same == 0:
        return 0
    precision, recall = 1.0 * same / len(pred), 1.0 * same / len(gold)
    return (2 * precision * recall) / (precision + recall)


def record_scores(d):
    """Per entity (sorted, unique): metric_max_over_ground_truths of compute_f1 and compute_exact over the answers."""
    ent, ans = record_sets(d)
    return [[max(squad_f1(e, a) for a in ans), max(int(squad_normalize(e) == squad_normalize(a)) for a in ans)]
            for e in ent]


NO_TEST_SPLIT = ("piqa", "hellaswag", "boolq", "winogrande", "cb", "copa", "multirc", "record", "rte", "sglue_rte",
                 "wic", "wsc", "triviaqa", "nq_open", "cola", "mnli", "mnli_mismatch", "mrpc", "qnli", "qqp", "sst2",
                 "wnli", "truthfulqa_mc1", "truthfulqa_mc2", "social_iqa", "commonsense_qa", "arithmetic_2da", "swag",
                 "xstorycloze_en", "xnli_en", "xnli_zh", "xnli_ur")
ROLLING = ("wikitext", "c4", "pile_10k", "paloma_ptb")  # loglikelihood_rolling; the words and bytes of the raw text
ALIAS = {"paloma_ptb": "PTB"}  # task_alias
LAMBADA = ("lambada_openai", "lambada_standard", "lambada_openai_cloze_yaml", "lambada_standard_cloze_yaml",
           "lambada_openai_mt_de")
LOGLIK = LAMBADA + ("arithmetic_2da",)  # output_type loglikelihood: (context, doc_to_target), no delimiter
WITH_NORM = ("piqa", "arc_easy", "arc_challenge", "openbookqa", "hellaswag", "sciq", "logiqa", "mathqa", "prost",
             "swag", "headqa_en", "qa4mre_2011")
BINARY_F1 = ("mrpc", "qqp", "mc_taco")  # metric f1, aggregation f1_score: bootstrappable
# gsm8k-cot.yaml fewshot_config.samples (lm-eval 0.4.9), as PyYAML reads the folded scalars: the first_n sampler's
# examples of gsm8k_cot, in order
GSM8K_COT_SAMPLES = [
    {"question": "There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they "
                 "are done, there will be 21 trees. How many trees did the grove workers plant today?",
     "target": "There are 15 trees originally. Then there were 21 trees after some more were planted. So there "
               "must have been 21 - 15 = 6. The answer is 6."},
    {"question": "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking "
                 "lot?",
     "target": "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."},
    {"question": "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left "
                 "in total?",
     "target": "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After "
               "eating 35, they had 74 - 35 = 39. The answer is 39."},
    {"question": "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many "
                 "lollipops did Jason give to Denny?",
     "target": "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 "
               "- 12 = 8. The answer is 8."},
    {"question": "Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys "
                 "does he have now?",
     "target": "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. "
               "5 + 4 = 9. The answer is 9."},
    {"question": "There were nine computers in the server room. Five more computers were installed each day, from "
                 "monday to thursday. How many computers are now in the server room?",
     "target": "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = "
               "20 computers were added. 9 + 20 is 29. The answer is 29."},
    {"question": "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How "
                 "many golf balls did he have at the end of wednesday?",
     "target": "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After "
               "losing 2 more, he had 35 - 2 = 33 golf balls. The answer is 33."},
    {"question": "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
     "target": "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - "
               "15 dollars left. 23 - 15 is 8. The answer is 8."},
]


def target_of(task, d):
    """A multiple-input task's one continuation (partial_target), else None."""
    if task == "winogrande" or task.startswith("xwinograd_"):
        return d["sentence"][d["sentence"].index("_") + 1:].strip()
    if task == "wsc273":  # "{% set index = pronoun_loc + pronoun | length %}{{text[index:]}}"
        p = wsc273_process(d)
        return p["text"][p["pronoun_loc"] + len(p["pronoun"]):]
    return None


def example(task, x):
    """The sampler's text of one few-shot example: doc_to_text + " " + target (multiple input: the gold context)."""
    text, choices, gold = doc_of(task, x)
    if target_of(task, x) is not None:
        return choices[gold] + " " + target_of(task, x)
    if task in LOGLIK:  # target_delimiter (arithmetic's "") + doc_to_target, lambada's " " + word; none if it is ""
        return text + ("" if not choices[0] else delimiter(task)) + choices[0]
    return text + delimiter(task) + choices[gold]


def contexts(task, docs, nshot, pool, seed=1234):
    """Task.fewshot_context with ContextSampler (lm-eval 0.4.9): one random.Random(seed) per task, doc by doc; the
    tasks without a test split (NO_TEST_SPLIT) draw nshot + 1 and drop the document itself."""
    rnd = random.Random(seed)
    out = []
    docs, pool = kept(task, docs), pool and kept(task, pool)  # process_docs's filter on both splits
    desc = (mmlu_description(task) if task.startswith("mmlu_") else "Answer these questions:\n\n" if task == "nq_open"
            else "")  # the YAML's description, before the examples
    for d in docs:
        text = doc_of(task, d)[0] or ""  # multiple input: the examples only
        if nshot == 0:
            out.append(desc + text)
            continue
        n = nshot + 1 if task in NO_TEST_SPLIT else nshot
        if task == "gsm8k_cot":  # FirstNSampler: the YAML's samples in order (a sample dict never equals a doc)
            ex = GSM8K_COT_SAMPLES[:nshot]
        elif task.startswith("mmlu_"):  # FirstNSampler over the subject's dev documents
            ex = [x for x in pool[:n] if doc_of(task, x) != doc_of(task, d)][:nshot]
        else:
            ex = [x for x in rnd.sample(pool, n) if doc_of(task, x) != doc_of(task, d)][:nshot]
        shots = "".join(example(task, x) + ("\n" if task == "nq_open" else "\n\n") for x in ex)  # fewshot_delimiter
        out.append(desc + shots + text)
    return out


def wikitext_detokenizer(string):
    """lm_eval/tasks/wikitext/preprocess_wikitext.py (the same rules as Megatron's)."""
    string = string.replace("s '", "s'")
    string = re.sub(r"/' [0-9]/", r"/'[0-9]/", string)
    string = string.replace(" @-@ ", "-")
    string = string.replace(" @,@ ", ",")
    string = string.replace(" @.@ ", ".")
    string = string.replace(" : ", ": ")
    string = string.replace(" ; ", "; ")
    string = string.replace(" . ", ". ")
    string = string.replace(" ! ", "! ")
    string = string.replace(" ? ", "? ")
    string = string.replace(" , ", ", ")
    string = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", string)
    string = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", string)
    string = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", string)
    string = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', string)
    string = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", string)
    string = string.replace("= = = =", "====")
    string = string.replace("= = =", "===")
    string = string.replace("= =", "==")
    string = string.replace(" " + chr(176) + " ", chr(176))
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" N ", " 1 ")
    string = string.replace(" 's", "'s")
    return string


def rolling_windows(tokens, max_len):
    """lm_eval.utils.get_rolling_token_windows(context_len=1) + make_disjoint_window."""
    if not tokens:
        return []
    out = []
    first = min(max_len, len(tokens))
    out.append(([EOD] + tokens[:first - 1], tokens[:first]))
    predicted = first
    while predicted < len(tokens):
        wp = min(len(tokens) - predicted, max_len)
        end = predicted + wp
        out.append((tokens[end - max_len - 1:end - 1], tokens[end - wp:end]))
        predicted += wp
    return [(a[:len(a) - (len(b) - 1)], b) for a, b in out]


def encode_pair(context, continuation):
    if context == "":
        return [EOD], tok_encode(continuation)
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok_encode(context + continuation)
    ctx = tok_encode(context)
    return ctx, whole[len(ctx):]


def bootstrap_stderr(f, xs, iters):
    """lm_eval.api.metrics.bootstrap_stderr(f, xs, iters) without the process pool."""
    chunk = min(1000, iters)
    res = []
    for i in range(iters // chunk):
        rnd = random.Random()
        rnd.seed(i)
        for _ in range(chunk):
            res.append(f(rnd.choices(xs, k=len(xs))))
    mu = sum(res) / len(res)
    return math.sqrt(sum((x - mu) ** 2 for x in res) / (len(res) - 1))


def perplexity(lls):  # aggregation perplexity
    return math.exp(-np.mean(lls))


def f1_score(items):  # aggregation f1: sklearn.metrics.f1_score(golds, preds), binary, 0 where undefined
    tp = sum(1 for g, p in items if g == 1 and p == 1)
    fp = sum(1 for g, p in items if g != 1 and p == 1)
    fn = sum(1 for g, p in items if g == 1 and p != 1)
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def matthews_corrcoef(items):  # aggregation matthews_corrcoef: sklearn's, from the confusion matrix
    golds, preds = zip(*items)
    labels = sorted(set(golds) | set(preds))
    C = np.array([[sum(1 for g, p in items if g == a and p == b) for b in labels] for a in labels], dtype=np.int64)
    t_sum, p_sum = C.sum(axis=1, dtype=np.float64), C.sum(axis=0, dtype=np.float64)
    n_correct, n_samples = np.trace(C, dtype=np.float64), p_sum.sum()
    cov_ytyp = n_correct * n_samples - np.dot(t_sum, p_sum)
    cov_ypyp = n_samples ** 2 - np.dot(p_sum, p_sum)
    cov_ytyt = n_samples ** 2 - np.dot(t_sum, t_sum)
    return 0.0 if cov_ypyp * cov_ytyt == 0 else float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def mean_stderr(arr):
    mu = sum(arr) / len(arr)
    return math.sqrt(sum((x - mu) ** 2 for x in arr) / (len(arr) - 1)) / math.sqrt(len(arr))


# ---- generate_until (triviaqa): HFLM.generate_until greedy, the filters and exact_match_hf_evaluate ----------------
INV = {v: k for k, v in VOCAB.items()}
BYTE = {c: b for b, c in BU.items()}
UNTIL = ["\n", ".", ",", "<|endoftext|>"]  # the YAML's until + the eos text handle_stop_sequences appends


def tok_decode(ids):
    out = b""
    for i in ids:
        t = INV.get(i)
        if t is not None:  # a padding row's id decodes to nothing (the tokenizers library drops it)
            out += bytes([BYTE[t]]) if t in BYTE else t.encode()
    return out.decode("utf-8", "replace")


GENERATED = {}


def generate(ctxs, maxgen, until=UNTIL):
    key = (tuple(ctxs), maxgen, tuple(until))
    if key not in GENERATED:
        GENERATED[key] = generate_uncached(ctxs, maxgen, until)
    return GENERATED[key]


def generate_uncached(ctxs, maxgen, until):
    """Greedy generate_until of each context (left-truncated to SEQ - maxgen tokens): full forwards of the whole prefix
    at every step (no cache), until EOD, a stop string in the decoded continuation or maxgen tokens. Returns the
    continuations cut before the first stop string (s.split(term)[0] for every term) and the tokens generated."""
    rows = [tok_encode(c)[-(SEQ - maxgen):] for c in ctxs]
    gen = [[] for _ in rows]
    live = list(range(len(rows)))
    while live:
        np.save(os.path.join(tmp, "tok.npy"), np.array([(rows[i] + gen[i] + [EOD] * SEQ)[:SEQ] for i in live],
                                                       dtype=np.int32))
        run([LOGITS, ck, os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")])
        lg = np.load(os.path.join(tmp, "logits.npy"))
        going = []
        for r, i in enumerate(live):
            t = int(np.argmax(lg[r, len(rows[i]) + len(gen[i]) - 1]))
            gen[i].append(t)
            if not (t == EOD or any(u in tok_decode(gen[i]) for u in until) or len(gen[i]) == maxgen):
                going.append(i)
        live = going
    texts = []
    for g in gen:
        s = tok_decode(g[:-1] if g[-1] == EOD else g)
        for u in until:
            s = s.split(u)[0]
        texts.append(s)
    return texts, [len(g) for g in gen]


NQ_IGNORE = "\\b(?:The |the |An |A |The |a |an )"  # nq_open.yaml's regexes_to_ignore


def exact_match(pred, aliases, regexes=None):
    """remove_whitespace, take_first, then process_results' multiple targets through exact_match_hf_evaluate
    (regexes_to_ignore, ignore_case, ignore_punctuation): 1.0 if any alias matches."""
    preds, refs = [pred.lstrip()] * len(aliases), aliases
    if regexes:
        for r in regexes:
            preds, refs = np.array([re.sub(r, "", x) for x in preds]), np.array([re.sub(r, "", x) for x in refs])
    preds, refs = np.asarray(preds), np.asarray(refs)
    preds, refs = np.char.lower(preds), np.char.lower(refs)
    table = string.punctuation.maketrans("", "", string.punctuation)
    preds, refs = np.char.translate(preds, table=table), np.char.translate(refs, table=table)
    return 1.0 if np.mean(preds == refs) > 0.0 else 0.0


def triviaqa_oracle(docs, maxgen, nshot=0, pool=None, task="triviaqa"):
    texts, ntok = generate(contexts(task, docs, nshot, pool), maxgen)
    em = [exact_match(t, d["answer"]["aliases"]) if task == "triviaqa" else exact_match(t, d["answer"], [NQ_IGNORE])
          for t, d in zip(texts, docs)]
    return {"exact_match,remove_whitespace": sum(em) / len(em),
            "exact_match_stderr,remove_whitespace": mean_stderr(em)}, sum(ntok), texts


# gsm8k.yaml, gsm8k-cot.yaml, gsm8k-cot-zeroshot.yaml: generation until "Question:" (the CoT tasks "Q:"), "</s>",
# "<|im_end|>" (+ the eos text), the filters strict-match and flexible-extract (RegexFilter: re.findall, group_select,
# "[invalid]"), then exact_match with regexes_to_ignore and ignore_case through NumPy arrays
def gsm8k_until(task):
    return ["Question:" if task == "gsm8k" else "Q:", "</s>", "<|im_end|>", "<|endoftext|>"]


def gsm8k_filters(task):
    strict = "#### (\\-?[0-9\\.\\,]+)" if task == "gsm8k" else "The answer is (\\-?[0-9\\.\\,]+)."
    return [("strict-match", strict, 0), ("flexible-extract", "(-?[$0-9.,]{2,})|(-?[0-9]+)", -1)]


def regex_filter(resp, pattern, group_select):
    match = re.compile(pattern).findall(resp)
    if not match:
        return "[invalid]"
    match = match[group_select]
    if isinstance(match, tuple):
        match = [m for m in match if m]
        match = match[0] if match else "[invalid]"
    return match.strip()


def gsm8k_exact_match(pred, gold):
    preds, refs = [pred], [gold]
    for rx in [",", "\\$", "(?s).*#### ", "\\.$"]:
        preds = np.array([re.sub(rx, "", x) for x in preds])
        refs = np.array([re.sub(rx, "", x) for x in refs])
    return float(np.mean(np.char.lower(preds) == np.char.lower(refs)))


def gsm8k_scores(text, gold, task="gsm8k"):
    return [gsm8k_exact_match(regex_filter(text, rx, g), gold) for _, rx, g in gsm8k_filters(task)]


def gsm8k_oracle(task, docs, maxgen, nshot, pool):
    texts, ntok = generate(contexts(task, docs, nshot, pool), maxgen, gsm8k_until(task))
    sc = [gsm8k_scores(t, doc_of(task, d)[1][0], task) for t, d in zip(texts, docs)]
    m = {}
    for f, (name, _, _) in enumerate(gsm8k_filters(task)):
        m["exact_match," + name] = sum(x[f] for x in sc) / len(sc)
        m["exact_match_stderr," + name] = mean_stderr([x[f] for x in sc])
    return m, sum(ntok), texts


def score_requests(reqs):
    """each (context, continuation) request's log-likelihood and whether it is greedy, from ckpt_logits's logits of
    its last SEQ + 1 tokens"""
    rows, spans = [], []
    for ctx, cont in reqs:
        whole = (ctx + cont)[-(SEQ + 1):]
        inp = whole[:-1]
        spans.append((len(inp) - len(cont), cont))
        rows.append(inp + [EOD] * (SEQ - len(inp)))
    np.save(os.path.join(tmp, "tok.npy"), np.array(rows, dtype=np.int32))
    run([LOGITS, ck, os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")])
    lg = np.load(os.path.join(tmp, "logits.npy")).astype(np.float64)
    mx = lg.max(-1, keepdims=True)
    logp = lg - (np.log(np.exp(lg - mx).sum(-1, keepdims=True)) + mx)
    lls = [float(sum(logp[i, a + k, t] for k, t in enumerate(cont))) for i, (a, cont) in enumerate(spans)]
    greedy = [all(int(np.argmax(lg[i, a + k])) == t for k, t in enumerate(cont)) for i, (a, cont) in enumerate(spans)]
    return lls, greedy


def oracle(tasks, nshot=0, pools=None):
    """The harness's numbers for {task: docs}: per task (summed ll, {metric: value})."""
    reqs, meta = [], []
    for task, docs in tasks.items():
        if task in ROLLING:
            for d in docs:
                raw = d["page" if task == "wikitext" else "text"]
                wins = rolling_windows(tok_encode(doc_of(task, d)[0]), SEQ)
                reqs.extend(wins)
                meta.append((task, len(wins), (len(re.split(r"\s+", raw)), len(raw.encode("utf-8"))), d))
            continue
        ctxs = contexts(task, docs, nshot, (pools or {}).get(task))
        for d, c in zip(kept(task, docs), ctxs):
            _, choices, gold = doc_of(task, d)
            tgt = target_of(task, d)
            for ch in choices:
                reqs.append(encode_pair(c, ch) if task in LOGLIK else encode_pair(c, delimiter(task) + ch)
                            if tgt is None else encode_pair(c + ch, " " + tgt))
            meta.append((task, choices, gold, d))
    lls, greedy = score_requests(reqs)
    res, at = {}, 0
    for task, choices, gold, d in meta:
        if task in ROLLING:  # choices: the number of windows, gold: (words, bytes)
            r = res.setdefault(task, {"sum": 0.0, "wb": []})
            r["sum"] += sum(lls[at:at + choices])
            r["wb"].append((sum(lls[at:at + choices]), gold))
            at += choices
            continue
        if task in LOGLIK:
            r = res.setdefault(task, {"sum": 0.0, "ll": [], "greedy": []})
            r["sum"] += lls[at]
            r["ll"].append(lls[at])
            r["greedy"].append(1.0 if greedy[at] else 0.0)
            at += 1
            continue
        ll = np.array(lls[at:at + len(choices)])
        r = res.setdefault(task, {"sum": 0.0, "acc": [], "acc_norm": [], "gold": [], "pred": [], "em": []})
        r["sum"] += float(ll.sum())
        if task == "truthfulqa_mc2":  # utils.process_results_mc2
            probs = np.exp(ll)
            probs_norm = probs / np.sum(probs)
            r["acc"].append(float(np.sum(probs_norm[np.array(d["mc2_targets"]["labels"]) == 1])))
        else:
            r["acc"].append(1.0 if int(np.argmax(ll)) == gold else 0.0)
        lens = np.array([float(len(c)) for c in choices])
        r["acc_norm"].append(1.0 if int(np.argmax(ll / lens)) == gold else 0.0)
        r["gold"].append(gold)
        r["pred"].append(int(np.argmax(ll)))
        r["em"].append(1.0 if any(greedy[at:at + len(choices)]) else 0.0)  # webqs: any accepted answer greedy
        if task == "record":  # process_results: the most likely entity's f1 and em against the answers
            f1, em = record_scores(d)[int(np.argmax(ll))]
            r.setdefault("record_f1", []).append(f1)
            r.setdefault("record_em", []).append(em)
        at += len(choices)
    out = {}
    for task, r in res.items():
        if task in ROLLING:  # weighted_perplexity, bits_per_byte
            ll = sum(x for x, _ in r["wb"])
            words, nbytes = sum(g[0] for _, g in r["wb"]), sum(g[1] for _, g in r["wb"])
            m = {"word_perplexity,none": math.exp(-ll / words), "byte_perplexity,none": math.exp(-ll / nbytes),
                 "bits_per_byte,none": -ll / nbytes / math.log(2)}
            out[task] = (r["sum"], m)
            continue
        if task in LOGLIK:  # arithmetic: acc alone
            m = {"acc,none": np.mean(r["greedy"]), "acc_stderr,none": mean_stderr(r["greedy"])}
            if task in LAMBADA:
                m.update({"perplexity,none": math.exp(-np.mean(r["ll"])), "perplexity_stderr,none":
                          bootstrap_stderr(perplexity, r["ll"], BOOT)})
            out[task] = (r["sum"], m)
            continue
        if task == "record":  # aggregation mean (sum / len), stderr mean_stderr
            f1, em = r["record_f1"], r["record_em"]
            out[task] = (r["sum"], {"f1,none": sum(f1) / len(f1), "f1_stderr,none": mean_stderr(f1),
                                    "em,none": sum(em) / len(em), "em_stderr,none": mean_stderr(em)})
            continue
        if task == "webqs":
            out[task] = (r["sum"], {"exact_match,none": np.mean(r["em"]), "exact_match_stderr,none": mean_stderr(r["em"])})
            continue
        if task == "cola":  # its one metric, mcc (bootstrappable)
            pairs = list(zip(r["gold"], r["pred"]))
            out[task] = (r["sum"], {"mcc,none": matthews_corrcoef(pairs),
                                    "mcc_stderr,none": bootstrap_stderr(matthews_corrcoef, pairs, BOOT)})
            continue
        m = {"acc,none": np.mean(r["acc"]), "acc_stderr,none": mean_stderr(r["acc"])}
        if task in WITH_NORM or task.startswith("mmlu_continuation_"):  # the default metric_list: acc, acc_norm
            m["acc_norm,none"] = np.mean(r["acc_norm"])
            m["acc_norm_stderr,none"] = mean_stderr(r["acc_norm"])
        if task == "cb":  # aggregation cb_multi_fi: not bootstrappable, so no stderr
            m["f1,none"] = cb_multi_f1(r["gold"], r["pred"])
            m["f1_stderr,none"] = "N/A"
        if task in BINARY_F1:
            pairs = list(zip(r["gold"], r["pred"]))
            m["f1,none"] = f1_score(pairs)
            m["f1_stderr,none"] = bootstrap_stderr(f1_score, pairs, BOOT)
        out[task] = (r["sum"], m)
    return out


# ---- fixtures ---------------------------------------------------------------------------------------------------
tmp = tempfile.mkdtemp(prefix="zt_harness_")
rng = random.Random(11)
NOUNS = ["cat", "dog", "bird", "fish", "cow", "fox"]
VERBS = ["sees", "likes", "hears", "finds"]
OBJECT = {"sees": "fox", "likes": "fish", "hears": "bird", "finds": "cow"}


def sentence():
    v = rng.choice(VERBS)
    return "the %s %s the %s." % (rng.choice(NOUNS), v, OBJECT[v])


SEQ = 64
# the corpus also holds webqs-style question/answer lines, so that the model continues "Answer:" with a space and
# the webqs fixture below can hold answers that are its greedy continuation
QA = ["Question: which %s %s the %s?\nAnswer: %s." % (n, v, OBJECT[v], OBJECT[v]) for n in NOUNS[:3] for v in VERBS]
_, _, TOK, MODEL, ck, _ = tiny_gpt(
    tmp, [" ".join(sentence() for _ in range(rng.randint(2, 5))) for d in range(200)] + QA * 12, PREPROCESS, PRETRAIN,
    run, seq=SEQ)


def w(n, k=3):
    return " ".join(rng.choice(NOUNS + VERBS + ["the", "a"]) for _ in range(rng.randint(1, k)))


def distinct(k, n):
    """k different choices (equal texts would tie up to rounding: the argmax between them is arbitrary)"""
    out = []
    while len(out) < k:
        c = w(n)
        if c not in out:
            out.append(c)
    return out


def make_docs(task, n):
    docs = []
    for i in range(n):
        if task == "piqa":
            docs.append({"goal": "the %s %s" % (rng.choice(NOUNS), rng.choice(VERBS)), "sol1": "a " + w(2), "sol2": "the " + w(3),
                         "label": rng.randint(0, 1)})
        elif task in ("arc_easy", "arc_challenge", "openbookqa"):
            k = rng.randint(3, 5)
            labels = [str(j + 1) for j in range(k)] if i % 3 == 0 else ["ABCDE"[j] for j in range(k)]
            d = {"id": "q%d" % i, "choices": {"text": distinct(k, 3), "label": labels},
                 "answerKey": rng.choice(labels)}
            if task == "openbookqa":
                # a trailing space (moved to the continuation by _encode_pair); an empty stem (context [EOD])
                d["question_stem"] = "" if i == 5 else "the %s %s%s" % (rng.choice(NOUNS), rng.choice(VERBS),
                                                                         " " if i % 2 else "")
                if i % 4 == 0:
                    d["answerKey"] = " " + d["answerKey"]  # answerKey.lstrip()
            else:
                d["question"] = "which %s %s the %s?" % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS))
            docs.append(d)
        elif task == "hellaswag":
            docs.append({"activity_label": rng.choice(["Cats", "Dog walk"]), "ctx_a": "the %s [title] %s  sees" %
                         (rng.choice(NOUNS), rng.choice(NOUNS)), "ctx_b": rng.choice(["THE Fox", "a [step] cow", ""]),
                         "endings": [" %s [header] %s " % (c, w(1)) for c in distinct(4, 3)],
                         "label": str(rng.randint(0, 3))})
        elif task == "winogrande" or task.startswith("xwinograd_"):
            s = "the %s %s the _ %s." % (rng.choice(NOUNS), rng.choice(VERBS), w(2))
            if task.startswith("xwinograd_") and i % 2:
                s = s.replace("the _", "\u306e _")  # a blank after non-ASCII text
            if i % 3 == 0:
                s = "_ " + s  # the blank first: the context is the option alone
            a, b = distinct(2, 1)
            docs.append({"sentence": s, "option1": a, "option2": b, "answer": rng.choice(["1", "2"])})
        elif task == "wikitext":
            page = " = The %s = \n" % rng.choice(NOUNS) + "".join(
                " %s , and the %s @-@ %s ( %s ) . \n" % (sentence()[:-1], rng.choice(NOUNS), rng.choice(NOUNS),
                                                        rng.choice(VERBS)) for _ in range(rng.randint(1, 5)))
            docs.append({"page": page if i != 2 else ""})  # an empty page: no window, one "word"
        elif task in ("c4", "pile_10k", "paloma_ptb"):  # c4's detokenized, the others' as they are (Unicode
            text = "".join(" %s , the %s @-@ %s ( %s ) .\u2003\n" % (sentence()[:-1], rng.choice(NOUNS), w(1), w(1))
                           for _ in range(rng.randint(1, 5)))  # whitespace splits words)
            docs.append({"text": text if i != 2 else "", "timestamp": "t", "url": "u", "meta": {"pile_set_name": "x"}})
        elif task in LAMBADA:
            t = " ".join(sentence() for _ in range(rng.randint(1, 2)))[:-1]  # "... the fox": learnt, often greedy
            if task.endswith("_mt_de"):  # non-ASCII words, split at single spaces only
                t = t.replace("the", "die").replace("sees", "sieht\u00a0\u00fcber")
            docs.append({"text": t if i != 3 else "fox"})  # one word: the context is [EOD] (the cloze's " ____. ->")
        elif task.startswith("arithmetic_"):  # EleutherAI/arithmetic: the completion starts with its space; a
            a, b = rng.randint(10, 99), rng.randint(10, 99)  # context's trailing space moves to the continuation
            docs.append({"context": "Question: What is %d plus %d?\nAnswer:%s" % (a, b, " " if i % 3 == 0 else ""),
                         "completion": ("%d" if i % 3 == 0 else " %d") % (a + b)})
        elif task == "social_iqa":  # social_i_qa's label is a string "1"-"3" (an integer is read too)
            a, b, c = distinct(3, 2)
            docs.append({"context": sentence(), "question": "what will the %s want?" % rng.choice(NOUNS),
                         "answerA": a, "answerB": b, "answerC": c,
                         "label": str(rng.randint(1, 3)) if i % 4 else rng.randint(1, 3)})
        elif task == "commonsense_qa":  # question.strip() (Unicode whitespace too)
            docs.append({"id": "c%d" % i, "question": ["which %s %s?", " which %s %s? \u2003\n", "\nthe %s %s"][i % 3] % (
                rng.choice(NOUNS), rng.choice(VERBS)), "question_concept": "c",
                "choices": {"label": list("ABCDE"), "text": distinct(5, 2)}, "answerKey": rng.choice("ABCDE")})
        elif task == "race":
            probs = []
            for q in range(rng.randint(1, 3)):
                kind = rng.randint(0, 2)
                question = ("the %s  _  ." % w(2)) if kind == 0 else ("which %s it's \"%s\"?\n" % (w(1), w(1)))
                probs.append({"answer": rng.choice("ABCD"), "options": distinct(4, 2), "question": question})
            docs.append({"example_id": "r%d" % i, "article": " ".join(sentence() for _ in range(2)),
                         "problems": probs if i == 4 else repr(probs)})
        elif task in ("anli_r1", "anli_r2", "anli_r3", "cb", "sglue_rte"):
            docs.append({"uid": "u%d" % i, "premise": sentence() + (" " if i % 3 == 0 else ""),
                         "hypothesis": "the %s %s the %s" % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)),
                         "label": rng.randint(0, 1 if task == "sglue_rte" else 2)})
        elif task == "rte":
            docs.append({"sentence1": sentence(), "sentence2": "the %s %s" % (rng.choice(NOUNS), rng.choice(VERBS)),
                         "label": rng.randint(0, 1), "idx": i})
        elif task == "copa":
            a, b = distinct(2, 2)
            if i == 4:
                b = a  # equal choices: the harness's gold is choices.index(target), the first
            cap = lambda c: c[0].upper() + c[1:] if i % 2 else c
            docs.append({"premise": "  The %s %s the %s.  " % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)),
                         "choice1": cap(a), "choice2": cap(b), "question": rng.choice(["cause", "effect"]),
                         "label": 1 if i == 4 else rng.randint(0, 1), "idx": i})
        elif task == "multirc":
            docs.append({"paragraph": " ".join(sentence() for _ in range(2)), "question": "what does the %s see?" %
                         rng.choice(NOUNS), "answer": ("it's " if i % 3 == 0 else "") + w(2), "label": rng.randint(0, 1),
                         "idx": {"paragraph": 0, "question": i, "answer": i}})
        elif task == "wic":
            v = rng.choice(VERBS)
            s1 = ("caf\u00e9 " if i % 2 else "") + "the %s %s the %s." % (rng.choice(NOUNS), v, OBJECT[v])
            docs.append({"word": v, "sentence1": s1, "sentence2": sentence(), "start1": s1.index(v),
                         "end1": s1.index(v) + len(v) + (40 if i == 3 else 0), "label": rng.randint(0, 1), "idx": i})
        elif task == "wsc":
            n = rng.choice(NOUNS)
            words = ["the", n, "said", '"', "it", '"', "ca", "n't", "see", "(", "the", "fox", ")", ",", "so", "it",
                     "ran", "."]
            text = " ".join(words) if i % 3 else " ".join(words).replace(" said", "  said")  # a double space too
            docs.append({"text": text, "span1_index": 0, "span2_index": 0 if i == 2 else 4,
                         "span1_text": "the " + n, "span2_text": "the" if i == 2 else "it", "label": rng.randint(0, 1),
                         "idx": i})
        elif task == "webqs":
            a = w(1)
            answers = [a + " the", a, "zz " + w(1)]  # "a" keeps, "a the" goes (a prefix is kept)
            rng.shuffle(answers)
            docs.append({"url": "u", "question": "which %s %s the fox?" % (rng.choice(NOUNS), rng.choice(VERBS)),
                         "answers": answers})
        elif task == "record":
            n1, n2 = rng.choice(NOUNS), rng.choice(NOUNS)
            ents = ["the " + n1, n1.upper() + "!", "A " + n2 + "-" + n1, "an " + n2, n2, "\u00c6r\u00f8 \u03a3\u0391\u03a3",
                    "The", "fox's " + n2, n1 + "  " + n2, "\u0130stanbul the_" + n1]
            entities = rng.sample(ents, rng.randint(3, 5))
            answers = rng.sample(entities, rng.randint(1, 2))
            passage = "  " + sentence() + "".join("\n@highlight\n" + sentence()[:-1] for _ in range(i % 3)) + "\n"
            docs.append({"passage": passage, "query": "the @placeholder %s the %s" % (rng.choice(VERBS), "@placeholder"
                         if i % 4 == 0 else rng.choice(NOUNS)), "entities": entities + entities[:1],
                         "answers": answers + answers[:1], "idx": {"passage": i, "query": i}})
        elif task == "boolq":
            docs.append({"passage": " ".join(sentence() for _ in range(2)), "question": "does the %s see the fox" %
                         rng.choice(NOUNS), "label": rng.choice([0, 1, True, False])})
        elif task in GLUE_LIKE:  # each template's fields, sentences and questions
            fields = re.findall(r"\{\{(\w+)\}\}", GLUE_LIKE[task][0])
            docs.append(dict({f: sentence() if "sentence" in f or f == "answer" else "which %s %s the %s?" % (
                rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)) for f in fields}, label=rng.randint(0, 1),
                idx=i))
        elif task in ("mnli", "mnli_mismatch"):  # hypothesis.strip(), "." added unless it ends in one
            h = ["the %s %s" % (rng.choice(NOUNS), rng.choice(VERBS)), " the fox. \u2003", "", "it is.."][i % 4]
            docs.append({"premise": sentence(), "hypothesis": h, "label": rng.randint(0, 2), "idx": i})
        elif task in ("truthfulqa_mc1", "truthfulqa_mc2"):  # mc2: several true answers, among 3-5 choices
            k = rng.randint(3, 5)
            c1 = ([rng.choice(NOUNS)] + ["the %s %s" % (x, rng.choice(VERBS)) for x in distinct(k - 1, 2)] if i % 2
                  else distinct(k, 3))  # a short true answer (often the likeliest) or not
            c2 = distinct(k, 3)
            labels = [1] * rng.randint(1, k - 1) + [0] * k
            docs.append({"question": "which %s %s the %s?" % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)),
                         "mc1_targets": {"choices": c1, "labels": [1] + [0] * (k - 1)},
                         "mc2_targets": {"choices": c2, "labels": labels[:k]}})
        elif task == "sciq":  # support.lstrip(): Unicode whitespace and newlines go, an empty support stays empty
            a, b, c, d = distinct(4, 2)
            docs.append({"question": "what does the %s see?" % rng.choice(NOUNS), "distractor1": a, "distractor2": b,
                         "distractor3": c, "correct_answer": d,
                         "support": ["", " \u2003\n" + sentence(), sentence() + " "][i % 3]})
        elif task == "prost":
            a, b, c, d = distinct(4, 1)
            docs.append({"context": sentence(), "ex_question": "which %s is the %s?" % (w(1), rng.choice(NOUNS)),
                         "A": a, "B": b, "C": c, "D": d, "label": rng.randint(0, 3), "name": "p%d" % i})
        elif task == "logiqa":  # 5 options (the prompt lists the first 4) and 3; a label with whitespace
            k = 5 if i == 1 else 3 if i == 2 else 4
            docs.append({"context": sentence(), "question": "which %s %s?" % (rng.choice(NOUNS), rng.choice(VERBS)),
                         "options": distinct(k, 2),
                         "label": (" %s\n" if i % 3 == 0 else "%s") % "abcd"[rng.randint(0, min(k, 4) - 1)]})
        elif task == "mathqa":  # math_qa's "a ) x , b ) y , ..." (commas inside and after options, a final "\n")
            opts = distinct(5, 2)
            o = " , ".join("%s ) %s" % (l, x) for l, x in zip("abcde", opts))
            o = o.replace(opts[1], opts[1] + " , ,") if i % 3 == 1 else o + "\n" if i % 3 == 2 else o
            docs.append({"Problem": "the %s %s %d cows ?" % (rng.choice(NOUNS), rng.choice(VERBS), i),
                         "Rationale": "r", "options": o, "correct": rng.choice("abcde"),
                         "annotated_formula": "f", "linear_formula": "l", "category": "general"})
        elif task == "pubmedqa":
            docs.append({"QUESTION": "does the %s see the fox?" % rng.choice(NOUNS), "CONTEXTS": [sentence() for _ in
                         range(i % 3)], "final_decision": rng.choice(["yes", "no", "maybe"]), "LABELS": ["A"]})
        elif task.startswith("xcopa_"):  # premise.strip()[:-1] drops a last character of several bytes too; the
            a, b = distinct(2, 2)  # choices' first letters lowered as Python's str.lower (U+0130 lengthens)
            cap = ["\u00c9", "\u0130", "T", ""][i % 4]
            docs.append({"premise": [" the %s %s the %s.\u2003", "the %s %s the %s\u3002", "the %s %s %s."][i % 3] %
                         (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)), "choice1": cap + a,
                         "choice2": cap.lower() + b, "question": rng.choice(["cause", "effect"]),
                         "label": rng.randint(0, 1), "idx": i, "changed": False})
        elif task.startswith("paws_"):  # short pairs (each choice is the whole pair); en's through
            s1 = ["a %s .", "( %s ) ,", " %s n't ;", "\u00e9 %s"][i % 4] % rng.choice(NOUNS)  # process_docs: an
            s2 = ["The %s", " \u0130t %s 's ", "( %s )"][i % 3] % rng.choice(NOUNS)  # empty or null sentence dropped
            if task == "paws_en" and i in (4, 6):
                s1, s2 = (None, s2) if i == 4 else (s1, "")
            docs.append({"id": i, "sentence1": s1, "sentence2": s2, "label": rng.randint(0, 1)})
        elif task.startswith("xnli_"):  # short: each choice is the whole pair, within the 64 positions
            docs.append({"premise": "a " + rng.choice(NOUNS), "hypothesis": "the " + rng.choice(NOUNS),
                         "label": rng.randint(0, 2)})
        elif task == "swag":
            docs.append({"video-id": "v", "fold-ind": "1", "startphrase": "the %s %s the" % (rng.choice(NOUNS),
                         rng.choice(VERBS)), "sent1": "s", "sent2": "t", "gold-source": "gold",
                         **{"ending%d" % k: e for k, e in enumerate(distinct(4, 2))}, "label": rng.randint(0, 3)})
        elif task.startswith(("storycloze_", "xstorycloze_")):
            a, b = distinct(2, 3)
            docs.append({"story_id": "s%d" % i, **{"input_sentence_%d" % k: sentence() for k in range(1, 5)},
                         "sentence_quiz1": a, "sentence_quiz2": b, "answer_right_ending": rng.randint(1, 2)})
        elif task.startswith("headqa_"):  # 4 or 5 answers, in their listed order
            k = 5 if i % 2 else 4
            docs.append({"name": "n", "year": "2016", "category": "c", "qid": i, "qtext": "which %s %s the fox?" %
                         (rng.choice(NOUNS), rng.choice(VERBS)), "ra": rng.randint(1, k), "image": "",
                         "answers": [{"aid": q + 1, "atext": t} for q, t in enumerate(distinct(k, 2))]})
        elif task.startswith("qa4mre_"):  # correct_answer_id: a digit string; document_str stripped
            opts = distinct(5, 2)
            docs.append({"topic_id": "1", "topic_name": "t", "test_id": "1", "document_id": "1",
                         "document_str": " \n" + sentence() + " \u2003", "question_id": str(i),
                         "question_str": "what does the %s see?" % rng.choice(NOUNS),
                         "answer_options": {"answer_id": ["1", "2", "3", "4", "5"], "answer_str": opts},
                         "correct_answer_id": str(rng.randint(1, 5)), "correct_answer_str": "x"})
        elif task == "wsc273":  # utils.py: a double space, "'s" after a possessive pronoun, the option's first word
            # lowered (every occurrence) unless the pronoun follows ". "; pronoun_loc 0 or 1 looks at text[-2], text[-1]
            n1, n2 = rng.sample(NOUNS, 2)
            pron, possessive = [("it", False), ("his", True), ("They", False), ("Her", True)][i % 4]
            head = ["the %s saw the %s.  " % (n1, n2), "the %s saw the %s and " % (n1, n2), "", "x"][i % 4]
            text = head + pron + " ran to the fox."
            opts = ["The " + n1 + " The", "the " + n2] if i % 2 else ["It " + n1, "a " + n2]
            docs.append({"text": text, "pronoun": pron, "pronoun_loc": text.replace("  ", " ").index(pron) if i % 4 != 3
                         else 1, "quote": "q", "quote_loc": 0, "options": opts, "label": rng.randint(0, 1),
                         "source": "s"})
    return docs


def greedy_word(context, n=4):
    """The model's own greedy continuation of context when it starts with a space: (word, True), else (None, False).
    Its text then scores is_greedy = 1 (lambada_openai's acc) unless the logits tie."""
    ids = tok_encode(context)
    inv = {v: k for k, v in VOCAB.items()}
    out = []
    for _ in range(n + 1):
        np.save(os.path.join(tmp, "tok.npy"), np.array([ids + [EOD] * (SEQ - len(ids))], dtype=np.int32))
        run([LOGITS, ck, os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")])
        nxt = int(np.argmax(np.load(os.path.join(tmp, "logits.npy"))[0, len(ids) - 1]))
        ch = inv.get(nxt, "")
        if not out and ch != "Ġ":
            return None
        if out and (ch in ("Ġ", "<|endoftext|>", "Ċ") or not ch):
            break
        out.append(nxt)
        ids.append(nxt)
    word = "".join(inv[i] for i in out[1:])
    return word or None


TASKS = ["piqa", "arc_easy", "arc_challenge", "openbookqa", "hellaswag", "boolq", "winogrande", "race",
         "lambada_openai", "wikitext", "anli_r1", "anli_r2", "anli_r3", "cb", "copa", "multirc", "rte", "sglue_rte",
         "wic", "wsc", "webqs", "record", "sciq", "logiqa", "mathqa", "prost", "pubmedqa", "mc_taco", "cola", "mnli",
         "mnli_mismatch", "mrpc", "qnli", "qqp", "sst2", "wnli", "truthfulqa_mc1", "truthfulqa_mc2", "social_iqa",
         "commonsense_qa", "lambada_openai_cloze_yaml", "arithmetic_2da", "c4", "pile_10k", "paloma_ptb",
         "lambada_openai_mt_de", "xcopa_et", "xcopa_zh", "swag", "storycloze_2016", "xstorycloze_en", "headqa_en",
         "qa4mre_2011", "wsc273", "xwinograd_jp", "xnli_en", "xnli_zh", "xnli_ur", "paws_en", "paws_ja"]
SELF_POOL = ("qa4mre_2011", "wsc273", "xwinograd_jp")  # test split only: the sampler draws from it, drops the doc
BOOT = 3000  # --bootstrap-iters (the harness's 100000 takes long in Python)
data, pools, paths, pool_paths = {}, {}, {}, {}
# lambada_openai texts whose last word is the model's greedy continuation (acc counts them)
greedy_docs = []
for c in ["the cat sees the", "the dog likes the", "the fox hears the", "the cow finds", "the bird sees"]:
    gw = greedy_word(c)
    if gw:
        greedy_docs.append({"text": c + " " + gw})
for t in TASKS:
    data[t], pools[t] = make_docs(t, 9), make_docs(t, 7)
    if t in SELF_POOL:
        pools[t] = data[t]
    if t == "lambada_openai":
        data[t] = greedy_docs + data[t]
    if t == "arithmetic_2da":  # completions that are the model's greedy continuation, their space included (no
        data[t] = [{"context": g["text"].rsplit(" ", 1)[0], "completion": " " + g["text"].rsplit(" ", 1)[1]}
                   for g in greedy_docs] + data[t]  # delimiter: acc counts them)
    paths[t], pool_paths[t] = os.path.join(tmp, t + "_validation.jsonl"), os.path.join(tmp, t + "_train.jsonl")
    for docs, p in ((data[t], paths[t]), (pools[t], pool_paths[t])):
        open(p, "w").write("".join(json.dumps(d) + "\n" for d in docs))
for q in ["which cat sees the fox?", "which dog likes the fish?", "which fox hears the bird?"]:
    gw = greedy_word("Question: %s\nAnswer:" % q)  # a webqs answer the model continues with greedily
    if gw:
        data["webqs"].append({"url": "u", "question": q, "answers": [gw, gw + " x", "zz"]})
open(paths["webqs"], "w").write("".join(json.dumps(d) + "\n" for d in data["webqs"]))
# triviaqa: questions the corpus answers ("which cat sees the fox" + "?\nAnswer: the fox.") and others; the aliases of
# every third are the model's own greedy answer in other case and punctuation (exact_match counts them), of the next
# that answer with a leading space (the filter strips the prediction only: no match), of the others unrelated
MAXGEN = 20
TQ = ["which %s %s the %s" % (n, v, OBJECT[v]) for n in NOUNS[:3] for v in VERBS[:2]] + [
    "which %s %s the cow" % (n, v) for n in NOUNS[3:] for v in VERBS[2:]]
_, _, tq_text = triviaqa_oracle([{"question": q, "answer": {"aliases": ["x"]}} for q in TQ], MAXGEN)
data["triviaqa"], pools["triviaqa"] = [], []
for i, (q, g) in enumerate(zip(TQ, tq_text)):
    g = g.strip() or "x"
    aliases = ([g.upper() + "!", "zz"] if i % 3 == 0 else [" " + g, "\u0130stanbul"] if i % 3 == 1 else
               ["zz " + w(1), "\u03a3\u0391\u03a3", g[:-1] or "y"])
    data["triviaqa"].append({"question": q, "question_id": "tq%d" % i,
                             "answer": {"aliases": aliases, "value": aliases[0]}})
    pools["triviaqa"].append({"question": "which %s %s it" % (rng.choice(NOUNS), rng.choice(VERBS)),
                              "answer": {"aliases": ["the " + rng.choice(NOUNS), "a " + w(1)]}})
paths["triviaqa"] = os.path.join(tmp, "triviaqa_validation.jsonl")
pool_paths["triviaqa"] = os.path.join(tmp, "triviaqa_train.jsonl")
for docs, p in ((data["triviaqa"], paths["triviaqa"]), (pools["triviaqa"], pool_paths["triviaqa"])):
    open(p, "w").write("".join(json.dumps(d) + "\n" for d in docs))
# nq_open: the same questions under its prompt; of every third document the answers hold the model's own answer with
# an article before it and in other case ("The X!": the article is ignored), of the next the answer behind "the" inside
# a word ("xthe X": \b keeps it, no match), of the others unrelated ones
_, _, nq_text = triviaqa_oracle([{"question": q, "answer": ["x"]} for q in TQ], MAXGEN, task="nq_open")
data["nq_open"], pools["nq_open"] = [], []
for i, (q, g) in enumerate(zip(TQ, nq_text)):
    g = g.strip() or "x"
    answer = (["The " + g.upper() + "!", "zz"] if i % 3 == 0 else ["xthe " + g, "an"] if i % 3 == 1 else
              ["a zz " + w(1), "\u0130"])
    data["nq_open"].append({"question": q, "answer": answer})
    pools["nq_open"].append({"question": "which %s %s it" % (rng.choice(NOUNS), rng.choice(VERBS)),
                             "answer": ["the " + rng.choice(NOUNS), "a " + w(1)]})
pools["nq_open"] += pools["nq_open"][:2]
paths["nq_open"] = os.path.join(tmp, "nq_open_validation.jsonl")
pool_paths["nq_open"] = os.path.join(tmp, "nq_open_train.jsonl")
for docs, p in ((data["nq_open"], paths["nq_open"]), (pools["nq_open"], pool_paths["nq_open"])):
    open(p, "w").write("".join(json.dumps(d) + "\n" for d in docs))
# gsm8k: the same questions; of every third document the answer ends in "#### [invalid]" (the filters' fallback, which
# exact_match then counts), of the next in "#### [INVALID]." (ignore_case and "\\.$"), of the others in "#### 1,234"
# (the model writes no digits); the pool's answers end in "#### N"
GSM_MAXGEN = 24
data["gsm8k"] = [{"question": q + "?", "answer": "%s %s\n#### %s" % (w(2), q, ["[invalid]", "[INVALID].", "1,234"][i % 3])}
                 for i, q in enumerate(TQ)]
pools["gsm8k"] = [{"question": "which %s %s it?" % (rng.choice(NOUNS), rng.choice(VERBS)),
                   "answer": "the %s <<2*3=6>>\n#### %d" % (rng.choice(NOUNS), rng.randint(1, 99))} for _ in range(9)]
paths["gsm8k"], pool_paths["gsm8k"] = os.path.join(tmp, "gsm8k_test.jsonl"), os.path.join(tmp, "gsm8k_train.jsonl")
for docs, p in ((data["gsm8k"], paths["gsm8k"]), (pools["gsm8k"], pool_paths["gsm8k"])):
    open(p, "w").write("".join(json.dumps(d) + "\n" for d in docs))
# gsm8k_cot: the target is what follows the last "####" of a left-to-right split, stripped ("#####" leaves "# 5", no
# "####" the whole answer); "[INVALID]." meets the fallback after ignore_case and "\\.$". Its examples are its YAML's
# (pool "-" for eval_tool). gsm8k_cot_zeroshot: gsm8k's documents and pool.
data["gsm8k_cot"] = [{"question": q + "?", "answer": "%s %s\n%s" % (w(2), q, ["#### [INVALID].", "####  1,234 \n",
                                                                               "##### 5", "no hashes 7"][i % 4])}
                     for i, q in enumerate(TQ)]
pools["gsm8k_cot"], pool_paths["gsm8k_cot"] = GSM8K_COT_SAMPLES, "-"
paths["gsm8k_cot"] = os.path.join(tmp, "gsm8k_cot_test.jsonl")
open(paths["gsm8k_cot"], "w").write("".join(json.dumps(d) + "\n" for d in data["gsm8k_cot"]))
data["gsm8k_cot_zeroshot"], pools["gsm8k_cot_zeroshot"] = data["gsm8k"], pools["gsm8k"]
paths["gsm8k_cot_zeroshot"], pool_paths["gsm8k_cot_zeroshot"] = paths["gsm8k"], pool_paths["gsm8k"]
pools["piqa"].append(data["piqa"][0])  # a test document in the pool: the sampler's "x != doc" drops it
open(pool_paths["piqa"], "w").write("".join(json.dumps(d) + "\n" for d in pools["piqa"]))


def evaluate(tasks, extra=(), mbs="3", mpi=None):
    cmd = [EVAL, "--tasks", ",".join(tasks), "--task-data"] + ["%s=%s" % (t, paths[t]) for t in tasks]
    cmd += ["--load", ck, "--micro-batch-size", mbs] + MODEL + list(extra)
    if mpi:
        cmd = MPIRUN + ["-np", str(mpi)] + cmd
    return run(cmd, ok=False)


def gens_of(out):
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"^> (\w+): (\d+) documents, \d+ generations, (\d+) tokens generated$", out, re.M)}


def sums_of(out):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^> ([\w-]+): \d+ documents, \d+ requests, summed "
                                                               r"log-likelihood (\S+)$", out, re.M)}


# 6. Megatron-DeepSpeed's tasks/eval_harness/evaluate.py command line as its ds_evalharness scripts pass it: the model
# from the checkpoint over the -1 placeholders, the old harness's lambada (lambada_openai), --adaptive_seq_len (the
# requests longest first, each micro batch at its longest: the same sums), --eval_fp32, --inference, a ds_config
ds_json = os.path.join(tmp, "ds_eval.json")
open(ds_json, "w").write(json.dumps({"train_batch_size": 3, "train_micro_batch_size_per_gpu": 3}))
PLACEHOLDERS = ["--num-layers", "-1", "--hidden-size", "-1", "--num-attention-heads", "-1", "--seq-length", "-1",
                "--max-position-embeddings", "-1"]


def evalharness_sh(load, tasks, results, data_args, tp=1, pp=1, extra=()):
    """MoE/ds_evalharness.sh's command line (NO_PP=true when pp is 1), with the tasks' files"""
    return [EVAL, "--load", load, "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
            "--moe-expert-parallel-size", "1"] + TOK[2:] + [
            "--micro-batch-size", "3", "--no-load-optim", "--no-load-rng", "--inference",
            "--disable-moe-token-dropping", "--tokenizer-type", "GPT2BPETokenizer", "--adaptive_seq_len", "--eval_fp32",
            "--num_fewshot", "0", "--task_list", tasks, "--results_path", results, "--deepspeed", "--deepspeed_config",
            ds_json] + PLACEHOLDERS + (["--no-pipeline-parallel"] if pp == 1 else []) + list(extra) + [
            "--task-data"] + data_args


if MPI:
    # 5. layouts: DP=2, TP=2, PP=2 equal one process (sums to 1e-6, every metric exactly)
    MT = ["piqa", "hellaswag", "winogrande"]
    res = {}
    for layout, extra, np_ in (("one process", [], None), ("DP=2", [], 2),
                               ("TP=2", ["--tensor-model-parallel-size", "2"], 2),
                               ("PP=2", ["--pipeline-model-parallel-size", "2"], 2)):
        js = os.path.join(tmp, "mpi_%s.json" % layout.replace(" ", "_").replace("=", ""))
        rc, out = evaluate(MT + ["triviaqa"], extra + ["--output-path", js, "--max-gen-toks", str(MAXGEN)], mpi=np_)
        res[layout] = (rc, sums_of(out), json.load(open(js))["results"] if rc == 0 and os.path.exists(js) else None,
                       out, gens_of(out))
    b = res["one process"]
    for layout in ("DP=2", "TP=2", "PP=2"):
        r = res[layout]
        same = r[0] == 0 and b[0] == 0 and r[2] is not None and set(r[1]) == set(MT) and all(
            abs(r[1][t] - b[1][t]) <= 1e-6 * abs(b[1][t]) for t in MT) and r[2] == b[2] and r[4] == b[4] and r[4]
        check(same, "%s = one process on %s and triviaqa (%s; %s)" % (layout, ",".join(MT), r[1], r[4]),
              r[3][-1500:])
    # evaluate.py's command line with --adaptive_seq_len: each micro batch's length set on every stage
    # (with triviaqa: --sequence-parallel is set aside for the key/value-cache decoding)
    ref = None
    for layout, tp, pp, extra in (("one process", 1, 1, []), ("PP=2", 1, 2, []),
                                  ("TP=2 with sequence parallelism", 2, 1, ["--sequence-parallel"])):
        js = os.path.join(tmp, "adaptive_tp%d_pp%d.json" % (tp, pp))
        cmd = evalharness_sh(ck, "piqa,hellaswag,triviaqa", js, ["piqa=" + paths["piqa"], "hellaswag=" +
                             paths["hellaswag"], "triviaqa=" + paths["triviaqa"]], tp, pp,
                             extra + ["--max-gen-toks", str(MAXGEN)])
        rc, out = run(MPIRUN + ["-np", str(tp * pp)] + cmd if tp * pp > 1 else cmd, ok=False)
        s_ = (sums_of(out), gens_of(out), json.load(open(js))["results"].get("triviaqa") if rc == 0 else None)
        if ref is None:
            ref = s_
            check(rc == 0 and set(s_[0]) == {"piqa", "hellaswag"} and s_[1] and s_[2],
                  "--adaptive_seq_len in one process (%s)" % (s_,), out[-1500:])
            continue
        check(rc == 0 and set(s_[0]) == set(ref[0]) and all(abs(s_[0][t] - ref[0][t]) <= 1e-6 * abs(ref[0][t])
                                                             for t in ref[0]) and s_[1:] == ref[1:],
              "--adaptive_seq_len, %s = one process (%s)" % (layout, s_), out[-1500:])
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(summary())

# 1. the sampler: random.Random(seed).sample(range(n), k), both of Python's branches (pool and set)
bad = 0
for trial in range(300):
    seed, n = rng.randint(0, 5000), rng.choice([rng.randint(1, 30), rng.randint(30, 3000)])
    k = rng.randint(0, min(n, 12))
    rc, out = run([TOOL, "sample", str(seed), str(n), str(k), "3"])
    r = random.Random(seed)
    want = "".join(" ".join(str(x) for x in r.sample(range(n), k)) + "\n" for _ in range(3))
    bad += out != want
check(bad == 0, "sampler: 300 random (seed, n, k) x 3 draws equal to Python's random.Random(seed).sample",
      "%d differ" % bad)

# 2. every task's prompts and choices, zero-shot and 2-shot, equal to the transcription of the harness
for t in TASKS + ["triviaqa", "nq_open", "gsm8k", "gsm8k_cot", "gsm8k_cot_zeroshot"]:
    for nshot in ((0,) if t in ROLLING + ("webqs",) else (0, 2, 8) if t == "gsm8k_cot" else (0, 2)):
        rc, out = run([TOOL, "mc", t, paths[t], str(nshot), pool_paths[t] if nshot else "-", "1234"])
        got = [json.loads(line) for line in out.splitlines()]
        want = [dict({"context": c, "choices": doc_of(t, d)[1], "gold": doc_of(t, d)[2]},
                     **({"target": target_of(t, d)} if target_of(t, d) is not None else {}),
                     **({"scores": record_scores(d)} if t == "record" else {}))
                for d, c in zip(kept(t, data[t]), contexts(t, data[t], nshot, pools[t]))]
        check(rc == 0 and got == want, "%s %d-shot: prompts, choices and gold as the harness builds them" % (t, nshot),
              "\n%s\n%s" % (got[:1], want[:1]))

# record's SQuAD scoring of 300 random entities against 6 answers: Unicode case mappings, punctuation, articles,
# Unicode whitespace and word characters
r5 = random.Random(5)
alpha = list("aAnNtThHeE _-'.,!?") + ["the", "an", "a ", " a", "The", "fox", "\u00c6", "\u03a3", "\u0130", "\u00df",
                                       "\u2160", "\u0663", "\u00a0", "\u2003", "\x1c", "e\u0301", "\u00bd"]
ents = sorted({"".join(r5.choice(alpha) for _ in range(r5.randint(0, 8))) for _ in range(300)})
sq = {"passage": "p", "query": "@placeholder", "entities": ents, "answers": ents[:1] + r5.sample(ents, 5)}
open(os.path.join(tmp, "record_squad.jsonl"), "w").write(json.dumps(sq) + "\n")
rc, out = run([TOOL, "mc", "record", os.path.join(tmp, "record_squad.jsonl"), "0", "-", "1234"])
got, want = json.loads(out)["scores"] if rc == 0 else None, record_scores(sq)
check(got == want, "record: f1 and em of %d random entities (%d partial f1) as transformers' squad_metrics" %
      (len(ents), sum(0 < f < 1 for f, _ in want)), "%s\n%s" % (got and got[:5], want[:5]))

# COPA's choice[0].lower() on non-ASCII first letters: lengthening (U+0130), titlecase digraphs, a lone sigma
firsts = ["\u0130", "\u00c9", "\u03a3", "\u1e9e", "\u01c5", "\u01c8", "\u2160", "\u0401", "A", "\u00df", "1",
          "\U00010400"]
cdocs = [{"premise": "The %s fell." % f, "choice1": f + "x \u03a3", "choice2": "Q" + f, "question": "cause",
          "label": i % 2, "idx": i} for i, f in enumerate(firsts)]


def built(task, docs, key):
    """eval_tool mc's `key` (context, choices) of each of docs, written as task's jsonl file; None if it fails"""
    path = os.path.join(tmp, task + "_unicode.jsonl")
    open(path, "w").write("".join(json.dumps(d) + "\n" for d in docs))
    rc, out = run([TOOL, "mc", task, path, "0", "-", "1234"])
    return [json.loads(line)[key] for line in out.splitlines()] if rc == 0 else None


got, want = built("copa", cdocs, "choices"), [doc_of("copa", d)[1] for d in cdocs]
check(got == want, "copa: choice[0].lower() of %d non-ASCII first letters as Python's str.lower()" % len(firsts),
      "%s\n%s" % (got, want))

# HellaSwag's ctx_b.capitalize(): the first character's titlecase (digraphs, ligatures, sharp s), the rest lowered
# (final sigma in context, U+0130 lengthening)
ctx_bs = ["\u01c6emal \u0391\u03a3", "\u00dftra\u00dfe", "\ufb01ne", "\u00e9lan \u00c9LAN",
          "\u038c\u03a3\u039f\u03a3 \u03a3\u0391", "\u0130STANBUL", "", "1abc \u00c0B", "\u0149 X", "\u1f80\u1f88",
          "\U00010428\U00010400", "a\u03a3\u0301 b"]
hdocs = [{"activity_label": "A", "ctx_a": "x", "ctx_b": c, "endings": ["e0", "e1", "e2", "e3"], "label": "0"}
         for c in ctx_bs]
got, want = built("hellaswag", hdocs, "context"), [doc_of("hellaswag", d)[0] for d in hdocs]
check(got == want, "hellaswag: ctx_b.capitalize() of %d non-ASCII strings as Python's str.capitalize()" % len(ctx_bs),
      "%s\n%s" % (got, want))

# MathQA's choices: re.findall(r"[abcd] \) .*?, |e \) .*?$", options) on 400 random option strings (commas, ") ",
# newlines inside and at the end), each cut c[4:].rstrip(" ,"); those where Python's regex finds no choice are left
# out (the tool refuses a gold label past the choices)
r7 = random.Random(7)
parts = ["a ) ", "b ) ", "c ) ", "d ) ", "e ) ", ", ", " , ", ",", " ", "\n", "x", "1.5", "e", "a )", "\u00e9", ") "]
mdocs = []
while len(mdocs) < 400:
    o = "".join(r7.choice(parts) for _ in range(r7.randint(0, 14)))
    if re.findall(r"[abcd] \) .*?, |e \) .*?$", o):
        mdocs.append({"Problem": "p", "options": o, "correct": "a"})
got, want = built("mathqa", mdocs, "choices"), [doc_of("mathqa", d)[1] for d in mdocs]
check(got == want, "mathqa: the choices of %d random option strings as Python's re.findall and rstrip (%d choices)" %
      (len(mdocs), sum(len(c) for c in want)), "%s\n%s" % (got and [(d, g, c) for d, g, c in zip(mdocs, got, want)
                                                               if g != c][:3], ""))

# cola's mcc and mrpc's f1 with their bootstrap stderrs on 60 random (gold, log-likelihoods) sets, against the
# transcriptions of sklearn's and of bootstrap_stderr (the fixture's model may predict one class only)
r8, bad, seen = random.Random(8), [], set()
for trial in range(60):
    task = ("cola", "mrpc")[trial % 2]
    n = r8.randint(1, 25)
    golds = [r8.randint(0, 1) for _ in range(n)] if trial % 7 else [1] * n
    lls = [[-r8.choice([1.0, 2.0, 3.0]) for _ in range(2)] for _ in range(n)]  # ties: np.argmax takes the first
    mpath = os.path.join(tmp, "metric.jsonl")
    open(mpath, "w").write("".join(json.dumps(dict(data[task][0], label=g)) + "\n" for g in golds))
    iters = 2500 if trial < 2 else 100
    p = subprocess.run([TOOL, "metrics", task, mpath, str(iters)], input=" ".join("%r" % x for l in lls for x in l),
                       stdout=subprocess.PIPE, universal_newlines=True)
    got = [float(x) for x in p.stdout.split()]
    pairs = [(g, int(np.argmax(l))) for g, l in zip(golds, lls)]
    f = matthews_corrcoef if task == "cola" else f1_score
    want = [f(pairs), bootstrap_stderr(f, pairs, iters)]
    got = got[:2] if task == "cola" else got[2:]
    seen.add(round(want[0], 6))
    if p.returncode or any(abs(a - b) > 1e-12 for a, b in zip(got, want)):
        bad.append((task, golds, lls, got, want))
check(not bad and len(seen) > 20, "cola's mcc and mrpc's f1 with bootstrap stderrs on 60 random sets as sklearn and "
      "bootstrap_stderr compute them (%d different values)" % len(seen), "%s" % bad[:2])

# 3. the metrics against NumPy on the checkpoint's logits: all six tasks in one run, then 2-shot
js = os.path.join(tmp, "results.json")
rc, out = evaluate(TASKS, ["--output-path", js, "--bootstrap-iters", str(BOOT)])
want = oracle({t: data[t] for t in TASKS})
got = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}}
sums = sums_of(out)
for t in TASKS:
    s, m = want[t]
    g = got["results"].get(t, {})
    ok = t in sums and abs(sums[t] - s) <= 1e-5 * abs(s)
    se = {k.replace(",none", "_stderr,none") for k in m if t in ROLLING}  # their stderr: "N/A"
    ok = ok and set(g) == set(m) | {"alias"} | se and all(g[k] == "N/A" for k in se) and all(
        g[k] == v if isinstance(v, str) else  # mc2's acc: continuous in the log-likelihoods (float forward)
        abs(g[k] - v) <= (1e-5 * abs(v) if "perplexity" in k or "per_byte" in k or t == "truthfulqa_mc2" else 1e-12)
        for k, v in m.items())
    if t in ("lambada_openai", "arithmetic_2da"):
        check(len(greedy_docs) >= 1 and g.get("acc,none", 0) >= len(greedy_docs) / len(data[t]) - 1e-12,
              "%s: the %d greedy-continuation texts count in acc (%s)" % (t, len(greedy_docs), g.get("acc,none")))
    check(ok, "%s 0-shot: summed log-likelihood %s (NumPy %.9g), %s" % (t, sums.get(t), s, m), "\n%s\n%s" % (g, out[-1500:]))
want_lambada, want_cloze = sums.get("lambada_openai", 0.0), sums.get("lambada_openai_cloze_yaml", 0.0)
want_paloma = sums.get("paloma_ptb", 0.0)
vers = got.get("versions", {})
check(rc == 0 and got.get("n-shot") == {t: 0 for t in TASKS} and vers.get("boolq") == 2.0 and
      vers.get("sglue_rte") == 0.0 and vers.get("multirc") == 2.0 and vers.get("webqs") == 2.0 and
      vers.get("cb") == 1.0 and vers.get("record") == 2.0 and vers.get("qqp") == 2.0 and vers.get("wnli") == 2.0 and
      vers.get("mrpc") == 1.0 and vers.get("sciq") == 1.0 and vers.get("cola") == 1.0 and
      vers.get("truthfulqa_mc1") == 2.0 and vers.get("truthfulqa_mc2") == 3.0 and vers.get("social_iqa") == 0.0 and
      vers.get("commonsense_qa") == "Yaml" and vers.get("arithmetic_2da") == 2.0 and
      vers.get("lambada_openai_cloze_yaml") == 1.0 and got["higher_is_better"].get("arithmetic_2da") == {"acc": True}
      and vers.get("c4") == 0.0 and vers.get("pile_10k") == 1.0 and vers.get("paloma_ptb") == 1.0 and
      got["results"].get("paloma_ptb", {}).get("alias") == "PTB" and
      got["higher_is_better"].get("c4") == {"word_perplexity": False, "byte_perplexity": False, "bits_per_byte": False},
      "results JSON: the harness's shape (results, versions: commonsense_qa's YAML sets none, \"Yaml\"; n-shot)")
check(want["webqs"][1]["exact_match,none"] > 0, "webqs: the answers that are the model's greedy continuation count in "
      "exact_match (%s)" % want["webqs"][1]["exact_match,none"])
table = [line for line in out.splitlines() if line.startswith("|")]
rows = sum(len([k for k in want[t][1] if "stderr" not in k]) for t in TASKS)
names = [r[1:r.index("|", 1)].strip() for r in table[2:]]
check(len(table) == 2 + rows and table[0].startswith("|Tasks") and [n for n in names if n] == [
      ALIAS.get(t, t) for t in sorted(TASKS)] and
      "|acc_norm|" in table[2 + names.index("piqa") + 1] and ("%.4f" % want["piqa"][1]["acc,none"]) in
      table[2 + names.index("piqa")] and any("|f1" in r and "N/A" in r for r in table),
      "the markdown table: %d metric rows, the tasks sorted by name as prepare_print_tasks sorts them (cb's f1 "
      "without a stderr)" % rows, "\n".join(table))
rc, o1 = evaluate(["boolq", "piqa"], mbs="1")
s1 = sums_of(o1)
check(rc == 0 and "piqa" in s1 and abs(s1["piqa"] - sums["piqa"]) <= 1e-6 * abs(sums["piqa"]) and '"boolq"' in o1,
      "micro batch 1 = micro batch 3; the JSON printed without --output-path")
FS = ("piqa", "arc_easy", "hellaswag", "winogrande", "race", "lambada_openai", "anli_r2", "cb", "copa", "wsc", "mrpc",
      "multirc", "record", "logiqa", "pubmedqa", "social_iqa", "commonsense_qa", "arithmetic_2da", "xcopa_zh", "swag",
      "xstorycloze_en", "headqa_en", "qa4mre_2011", "wsc273", "xwinograd_jp", "xnli_zh", "paws_en")
fs = ["--num-fewshot", "2", "--fewshot-data"] + ["%s=%s" % (t, pool_paths[t]) for t in FS]
rc, out = evaluate(list(FS), fs)
want = oracle({t: data[t] for t in FS}, 2, pools)
sums = sums_of(out)
for t in FS:
    check(rc == 0 and t in sums and abs(sums[t] - want[t][0]) <= 1e-5 * abs(want[t][0]),
          "%s 2-shot (seed 1234): summed log-likelihood %s, NumPy %.9g" % (t, sums.get(t), want[t][0]), out[-1200:])
check("of them are longer than --seq-length 64 + 1 tokens" in out, "2-shot: the left-truncated requests are said")
long_xnli = os.path.join(tmp, "xnli_long.jsonl")
open(long_xnli, "w").write(json.dumps({"premise": sentence() * 3, "hypothesis": "the cat", "label": 0}) + "\n")
rc, out = run([EVAL, "--tasks", "xnli_ur", "--task-data", "xnli_ur=" + long_xnli, "--load", ck, "--micro-batch-size",
               "3"] + MODEL, ok=False)
check(rc == 0 and " > 3 of them have a continuation longer than --seq-length 64 tokens: only its last 64 tokens are "
      "scored (the harness cannot score such a request" in out, "a continuation longer than the positions: its last "
      "--seq-length tokens scored, and said", out[-800:])

# 3b. triviaqa (generate_until): each document's greedy continuation (the key/value-cache decoder against full
# forwards of the prefix), cut at the stop strings, through the filters and exact_match as NumPy computes it; 0- and
# 2-shot (left-truncated contexts), and a --max-gen-toks that every generation reaches
for nshot, maxgen in ((0, MAXGEN), (2, MAXGEN), (0, 3)):
    js = os.path.join(tmp, "triviaqa_%d_%d.json" % (nshot, maxgen))
    extra = ["--max-gen-toks", str(maxgen), "--output-path", js]
    if nshot:
        extra += ["--num-fewshot", str(nshot), "--fewshot-data", "triviaqa=" + pool_paths["triviaqa"]]
    rc, out = evaluate(["triviaqa"], extra)
    m, ntok, texts = triviaqa_oracle(data["triviaqa"], maxgen, nshot, pools["triviaqa"])
    got = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}}
    g = got["results"].get("triviaqa", {})
    ok = set(g) == set(m) | {"alias"} and all(abs(g[k] - v) <= 1e-12 for k, v in m.items())
    check(rc == 0 and ok and gens_of(out).get("triviaqa") == (len(TQ), ntok) and got["versions"]["triviaqa"] == 3.0,
          "triviaqa %d-shot, --max-gen-toks %d: %d tokens generated, %s, as the full-forward oracle and NumPy %s" %
          (nshot, maxgen, ntok, m, texts), "%s\n%s\n%s" % (g, texts, out[-1500:]))
    if nshot == 0 and maxgen == MAXGEN:
        table = [line for line in out.splitlines() if line.startswith("|triviaqa")]
        check(any(len(t) < maxgen - 1 for t in texts) and any(len(t) == maxgen for t in texts) and len(set(texts)) > 2,
              "triviaqa: generations stopped by a stop string and by --max-gen-toks, %d different texts" %
              len(set(texts)), str(texts))
        check(m["exact_match,remove_whitespace"] > 0 and table and "|remove_whitespace|" in table[0] and
              "|exact_match|" in table[0], "triviaqa: the model's own answers count (%s); the table's filter column" %
              m["exact_match,remove_whitespace"], "\n".join(table))
    if nshot:
        check("of them have contexts longer than --seq-length 64 - --max-gen-toks %d tokens" % MAXGEN in out,
              "triviaqa 2-shot: the left-truncated contexts are said", out[-1500:])
# the scorer alone on 300 random predictions against random aliases: Unicode case mappings that lengthen a string
# (NumPy cuts them to the array's itemsize), final sigma, ASCII punctuation, Unicode whitespace before the prediction,
# NULs in the prediction (NumPy drops trailing ones)
r6 = random.Random(6)
alpha = list("aAfFoOxX -'.,!?_") + ["the", "Fox", "\u0130", "\u03a3", "\u00df", "\u00c6", "\u2003", "\x1c", "\u00a0",
                                    "e\u0301", "\u2160", "\u00bf"]
docs, preds = [], []
for i in range(300):
    aliases = ["".join(r6.choice(alpha) for _ in range(r6.randint(0, 6))) for _ in range(r6.randint(1, 4))]
    pred = r6.choice(aliases) if i % 2 else "".join(r6.choice(alpha) for _ in range(r6.randint(0, 6)))
    pred = r6.choice(["", " ", "\u2003", "\n "]) + pred + r6.choice(["", "\x00", "!", "\x00\x00", "\x00a"])
    docs.append({"question": "q", "answer": {"aliases": aliases}})
    preds.append(pred)
em_file = os.path.join(tmp, "triviaqa_em.jsonl")
open(em_file, "w").write("".join(json.dumps(d) + "\n" for d in docs))
stdin = b"".join(b"%d\n%s" % (len(p.encode()), p.encode()) for p in preds)
p_ = subprocess.run([TOOL, "em", "triviaqa", em_file], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
got = [float(x) for x in p_.stdout.decode().split()] if p_.returncode == 0 else []
want = [exact_match(p, d["answer"]["aliases"]) for p, d in zip(preds, docs)]
check(got == want, "triviaqa's exact_match of 300 random predictions (%d matches) as NumPy's np.char computes it" %
      sum(want), "%s\n%s" % (got[:20], want[:20]))

# nq_open: the same checks (its description, "\n" between examples, the articles ignored), 0- and 2-shot
for nshot in (0, 2):
    js = os.path.join(tmp, "nq_open_%d.json" % nshot)
    extra = ["--max-gen-toks", str(MAXGEN), "--output-path", js]
    if nshot:
        extra += ["--num-fewshot", str(nshot), "--fewshot-data", "nq_open=" + pool_paths["nq_open"]]
    rc, out = evaluate(["nq_open"], extra)
    m, ntok, texts = triviaqa_oracle(data["nq_open"], MAXGEN, nshot, pools["nq_open"], task="nq_open")
    got = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}}
    g = got["results"].get("nq_open", {})
    ok = set(g) == set(m) | {"alias"} and all(abs(g[k] - v) <= 1e-12 for k, v in m.items())
    check(rc == 0 and ok and gens_of(out).get("nq_open") == (len(TQ), ntok) and got["versions"]["nq_open"] == 4.0 and
          (nshot or 0 < m["exact_match,remove_whitespace"] < 1),
          "nq_open %d-shot: %d tokens generated, %s, as the full-forward oracle and NumPy (articles ignored by re) %s" %
          (nshot, ntok, m, texts), "%s\n%s\n%s" % (g, texts, out[-1500:]))
# its scorer alone on 300 random predictions and answers with articles at word starts and inside words, Unicode word
# characters before them (Python's \b), case, punctuation and NULs
r9 = random.Random(9)
alpha2 = alpha + ["The ", "the ", "An ", "A ", "a ", "an ", "\u00e9", "1", "_", "-"]
docs, preds = [], []
for i in range(300):
    answers = ["".join(r9.choice(alpha2) for _ in range(r9.randint(0, 6))) for _ in range(r9.randint(1, 4))]
    pred = r9.choice(answers) if i % 2 else "".join(r9.choice(alpha2) for _ in range(r9.randint(0, 6)))
    pred = r9.choice(["", " ", "The ", "\u2003a "]) + pred + r9.choice(["", "\x00", "!", " a"])
    docs.append({"question": "q", "answer": answers})
    preds.append(pred)
open(em_file, "w").write("".join(json.dumps(d) + "\n" for d in docs))
stdin = b"".join(b"%d\n%s" % (len(p.encode()), p.encode()) for p in preds)
p_ = subprocess.run([TOOL, "em", "nq_open", em_file], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
got = [float(x) for x in p_.stdout.decode().split()] if p_.returncode == 0 else []
want = [exact_match(p, d["answer"], [NQ_IGNORE]) for p, d in zip(preds, docs)]
changed = sum(re.sub(NQ_IGNORE, "", p.lstrip()) != p.lstrip() for p in preds)
check(got == want and changed > 50, "nq_open's exact_match of 300 random predictions (%d matches, %d with articles "
      "removed) as re.sub and NumPy's np.char compute it" % (sum(want), changed), "%s\n%s" % (got[:20], want[:20]))

# 3c. gsm8k (generate_until, two filters): without --num-fewshot its YAML's 5 shots (config num_fewshot null), with
# --num-fewshot 0 and 2; each against the full-forward oracle, the filters by Python's re and exact_match by NumPy
# (with examples, --max-gen-toks 8 leaves 56 of the 64 positions to the context, so the examples' ends are seen)
for nshot, maxgen in ((None, 8), (0, GSM_MAXGEN), (2, 8)):
    js = os.path.join(tmp, "gsm8k_%s.json" % nshot)
    extra = ["--max-gen-toks", str(maxgen), "--output-path", js]
    extra += ["--num-fewshot", str(nshot)] if nshot is not None else []
    extra += ["--fewshot-data", "gsm8k=" + pool_paths["gsm8k"]] if nshot != 0 else []
    rc, out = evaluate(["gsm8k"], extra)
    k = 5 if nshot is None else nshot
    m, ntok, texts = gsm8k_oracle("gsm8k", data["gsm8k"], maxgen, k, pools["gsm8k"])
    got = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}, "config": {}}
    g = got["results"].get("gsm8k", {})
    ok = set(g) == set(m) | {"alias"} and all(abs(g[q] - v) <= 1e-12 for q, v in m.items())
    check(rc == 0 and ok and gens_of(out).get("gsm8k") == (len(TQ), ntok) and got["versions"]["gsm8k"] == 3.0 and
          got["n-shot"]["gsm8k"] == k and got["config"]["num_fewshot"] == nshot,
          "gsm8k %s-shot: %d tokens generated, %s, as the full-forward oracle, re and NumPy %s" %
          (k if nshot is not None else "5 (default)", ntok, m, texts), "%s\n%s\n%s" % (g, texts, out[-1500:]))
    if k:
        check("of them have contexts longer than --seq-length 64 - --max-gen-toks 8 tokens" in out,
              "gsm8k %d-shot: the left-truncated contexts are said" % k, out[-1500:])
    if nshot == 0:
        table = [line for line in out.splitlines() if line.startswith("|gsm8k") or line.startswith("|     |")]
        check(0 < m["exact_match,strict-match"] < 1 and len(table) == 2 and "|strict-match    |" in table[1] and
              table[0].startswith("|gsm8k|") and "|flexible-extract|     0|exact_match|" in table[0],
              "gsm8k: one table row per filter, sorted as make_table sorts \"metric,filter\"; the fallback "
              "[invalid] counts as the harness counts it (%s)" %
              m["exact_match,strict-match"], "\n".join(table) + "\n" + str(texts))
# gsm8k_cot (its YAML's 8 examples by default, in order; 3 with --num-fewshot) and gsm8k_cot_zeroshot ("Let's think
# step by step.", 0-shot: its YAML's num_fewshot 0, which the harness keeps over --num_fewshot 2): the same checks,
# stopping at "Q:"
for task, nshot, maxgen in (("gsm8k_cot", None, 8), ("gsm8k_cot", 3, 8), ("gsm8k_cot_zeroshot", None, GSM_MAXGEN),
                            ("gsm8k_cot_zeroshot", 2, GSM_MAXGEN)):
    js = os.path.join(tmp, "%s_%s.json" % (task, nshot))
    rc, out = evaluate([task], ["--max-gen-toks", str(maxgen), "--output-path", js] +
                       (["--num-fewshot", str(nshot)] if nshot is not None else []))
    k = 0 if task == "gsm8k_cot_zeroshot" else 8 if nshot is None else nshot
    m, ntok, texts = gsm8k_oracle(task, data[task], maxgen, k, pools[task])
    got = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}, "config": {}}
    g = got["results"].get(task, {})
    ok = set(g) == set(m) | {"alias"} and all(abs(g[q] - v) <= 1e-12 for q, v in m.items())
    check(rc == 0 and ok and gens_of(out).get(task) == (len(TQ), ntok) and got["versions"][task] == 3.0 and
          got["n-shot"][task] == k and got["config"]["num_fewshot"] == nshot and
          (k == 0 or "the examples of its YAML" in out) and
          (nshot is None or k > 0 or "num_fewshot is 0 in its YAML, which the harness keeps over --num-fewshot" in out),
          "%s %d-shot%s: %d tokens generated, %s, as the full-forward oracle, re and NumPy %s" %
          (task, k, " (default)" if nshot is None else "" if k else " (--num-fewshot %d kept at 0)" % nshot, ntok, m,
           texts), "%s\n%s\n%s" % (g, texts, out[-1500:]))


def tool_scores(task, docs, preds):
    """eval_tool em: each document's score per filter of its continuation ([] when the tool fails)."""
    em_file = os.path.join(tmp, task + "_em.jsonl")
    open(em_file, "w").write("".join(json.dumps(d) + "\n" for d in docs))
    stdin = b"".join(b"%d\n%s" % (len(p.encode()), p.encode()) for p in preds)
    p = subprocess.run([TOOL, "em", task, em_file], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return [[float(x) for x in line.split()] for line in p.stdout.decode().splitlines()] if p.returncode == 0 else []


# the scorer alone, 3000 random continuations against random answers: both regexes' matches (greedy runs, "-" only
# before a run, "$" in the flexible class, the first and the last match), the ignored regexes (commas, "$", up to the
# last "#### ", a final "." or ".\n"), NULs in the continuation and Unicode case mappings in the answer
r7 = random.Random(7)
alpha = list("0123456789-$.,# \n") + ["#### ", "####", "a", "\u0130", "\x00", "\u03a3", "A", "1,000", "-", "--5", ". "]
docs, preds = [], []
for i in range(3000):
    ans = "".join(r7.choice(alpha) for _ in range(r7.randint(0, 8)))
    if i % 3 == 0:
        ans = "x #### " + "".join(r7.choice("0123456789,.-$\u0130") for _ in range(r7.randint(0, 4)))
    pred = ("".join(r7.choice(alpha) for _ in range(r7.randint(0, 10))) if i % 2 else
            r7.choice(["", "so ", "#### "]) + ans + r7.choice(["", ".", ".\n", "\x00", " 5"]))
    docs.append({"question": "q", "answer": ans.replace("\x00", "")})  # a task file's U+0000 is refused
    preds.append(pred)
got = tool_scores("gsm8k", docs, preds)
want = [gsm8k_scores(p, d["answer"]) for p, d in zip(preds, docs)]
check(got == want and 0 < sum(x[0] for x in want) < 3000 and 0 < sum(x[1] for x in want) < 3000,
      "gsm8k's strict-match and flexible-extract exact_match of 3000 random continuations (%d and %d matches) as re "
      "and NumPy compute them" % (sum(x[0] for x in want), sum(x[1] for x in want)), "%s\n%s" % (got[:10], want[:10]))

# gsm8k_cot's strict-match, 3000 random continuations: "The answer is (\\-?[0-9\\.\\,]+)." whose final "." takes the
# character after the run, or the run's last one before "\\n" or the end (a run of one then fails, "-" or not)
r8 = random.Random(8)
alpha = list("0123456789-$., \n") + ["The answer is ", "The answer is -", "The answer is", "#### ", "x", "\u0130"]
docs, preds = [], []
for i in range(3000):
    ans = "".join(r8.choice("0123456789,.-$") for _ in range(r8.randint(0, 4)))
    pred = "".join(r8.choice(alpha) for _ in range(r8.randint(0, 10)))
    if i % 2:
        pred += "The answer is " + r8.choice(["", "-"]) + ans + r8.choice(["", ".", ".\n", "\n", " 5", "x", "\u00e9"])
    docs.append({"question": "q", "answer": r8.choice(["x #### ", "####", "#####", ""]) + ans})
    preds.append(pred)
got = tool_scores("gsm8k_cot", docs, preds)
want = [gsm8k_scores(p, doc_of("gsm8k_cot", d)[1][0], "gsm8k_cot") for p, d in zip(preds, docs)]
check(got == want and 0 < sum(x[0] for x in want) < 3000,
      "gsm8k_cot's strict-match and flexible-extract exact_match of 3000 random continuations (%d and %d matches) as "
      "re and NumPy compute them" % (sum(x[0] for x in want), sum(x[1] for x in want)),
      "%s\n%s" % (got[:10], want[:10]))

# 3d. MMLU: its 57 subjects read from one file of them all (cais/mmlu "all", the subjects interleaved), each
# subject's prompt after its description; --tasks mmlu scores every subject and its groups: acc weighted by the
# subjects' documents (aggregate_subtask_metrics) with pooled_sample_stderr, the entries in prepare_print_tasks's order
# and aliases; 2-shot from each subject's first dev documents (first_n); a subject and a group alone
subjects = sorted(MMLU_GROUP_OF)
mdata, mdev = {}, {}
for i, sub in enumerate(subjects):
    t = "mmlu_" + sub
    mdata[t] = [{"question": " %s %s? " % (sub.split("_")[0], w(2)) if j == 0 else "which %s %s" % (
        rng.choice(NOUNS), w(2)), "subject": sub, "choices": distinct(4, 2),
        "answer": "ABCD"[rng.randint(0, 3)] if j == 1 else rng.randint(0, 3)} for j in range(2 + i % 3)]
    mdev[t] = [{"question": "the %s %s" % (rng.choice(NOUNS), w(1)), "subject": sub, "choices": distinct(4, 1),
                "answer": rng.randint(0, 3)} for j in range(3)]
mmlu_all = [d for j in range(4) for t in sorted(mdata) for d in mdata[t][j:j + 1]]  # interleaved subjects
mmlu_path, mmlu_dev = os.path.join(tmp, "mmlu_test.jsonl"), os.path.join(tmp, "mmlu_dev.jsonl")
open(mmlu_path, "w").write("".join(json.dumps(d) + "\n" for d in mmlu_all))
open(mmlu_dev, "w").write("".join(json.dumps(d) + "\n" for t in sorted(mdev) for d in mdev[t]))
for t in ("mmlu_abstract_algebra", "mmlu_us_foreign_policy", "mmlu_world_religions"):
    for nshot in (0, 2):
        rc, out = run([TOOL, "mc", t, mmlu_path, str(nshot), mmlu_dev if nshot else "-", "1234"])
        got = [json.loads(line) for line in out.splitlines()]
        want = [{"context": c, "choices": doc_of(t, d)[1], "gold": doc_of(t, d)[2]}
                for d, c in zip(mdata[t], contexts(t, mdata[t], nshot, mdev[t]))]
        check(rc == 0 and got == want, "%s %d-shot from the file of all subjects: its description, prompts, choices "
              "and gold as the harness builds them" % (t, nshot), "\n%s\n%s" % (got[:1], want[:1]))


def mmlu_oracle(tasks, nshot):
    """per subject task: (summed ll, acc, acc stderr, n), from the checkpoint's logits"""
    ctxs = {t: contexts(t, mdata[t], nshot, mdev[t]) for t in tasks}
    lls = score_requests([encode_pair(c, " " + ch) for t in tasks for d, c in zip(mdata[t], ctxs[t])
                          for ch in doc_of(t, d)[1]])[0]
    out, at = {}, 0
    for t in tasks:
        accs, s = [], 0.0
        for d in mdata[t]:
            ll = np.array(lls[at:at + 4])
            at += 4
            s += float(ll.sum())
            accs.append(1.0 if int(np.argmax(ll)) == doc_of(t, d)[2] else 0.0)
        out[t] = (s, np.mean(accs), mean_stderr(accs), len(accs))
    return out


def mmlu_group(res, members):
    """consolidate_group_results: aggregate_subtask_metrics (weight_by_size) and pooled_sample_stderr"""
    m, se, n = [res[t][1] for t in members], [res[t][2] for t in members], [res[t][3] for t in members]
    acc = sum(a * k for a, k in zip(m, n)) / sum(n)
    var = sum((k - 1) * e ** 2 * k for k, e in zip(n, se)) / (sum(n) - len(n))
    return acc, math.sqrt(var / sum(n))


def mmlu_expected(top, res):
    """prepare_print_tasks: [(key, alias, acc, stderr)] sorted by name at each level, groups before their tasks"""
    rows = []
    for e in sorted(top):
        if e == "mmlu":
            rows.append(("mmlu", "mmlu") + mmlu_group(res, ["mmlu_" + s for s in subjects]))
            for g in sorted(MMLU_ALIAS):
                mem = ["mmlu_" + s for s in subjects if MMLU_GROUP_OF[s] == g[5:]]
                rows.append((g, " - " + MMLU_ALIAS[g]) + mmlu_group(res, mem))
                rows += [(t, "  - " + t[5:]) + res[t][1:3] for t in mem]
        elif e in MMLU_ALIAS:
            mem = ["mmlu_" + s for s in subjects if MMLU_GROUP_OF[s] == e[5:]]
            rows.append((e, MMLU_ALIAS[e]) + mmlu_group(res, mem))
            rows += [(t, " - " + t[5:]) + res[t][1:3] for t in mem]
        else:
            rows.append((e, e[5:] if e.startswith("mmlu_") else e, None, None))
    return rows


def mmlu_run(tasks, data_args, extra=()):
    js = os.path.join(tmp, "mmlu_%d.json" % len(os.listdir(tmp)))
    rc, out = run([EVAL, "--tasks", ",".join(tasks), "--task-data"] + data_args + ["--load", ck, "--micro-batch-size",
                  "4", "--output-path", js] + MODEL + list(extra), ok=False)
    return rc, out, json.load(open(js)) if rc == 0 and os.path.exists(js) else {"results": {}}


all_tasks = ["mmlu_" + s for s in subjects]
rc, out, got = mmlu_run(["mmlu"], ["mmlu=" + mmlu_path])
res, sums = mmlu_oracle(all_tasks, 0), sums_of(out)
bad = [t for t in all_tasks if t not in sums or abs(sums[t] - res[t][0]) > 1e-5 * abs(res[t][0])]
check(rc == 0 and not bad and "> mmlu: %d documents of its 57 subjects from %s\n" % (len(mmlu_all), mmlu_path) in out,
      "mmlu 0-shot: the summed log-likelihood of each of the 57 subjects (%d documents, routed by \"subject\") equal "
      "to NumPy's" % len(mmlu_all), "%s\n%s" % (bad[:3], out[-1500:]))
want = mmlu_expected(["mmlu"], res)
r = got["results"]
ok = list(r) == [k for k, *_ in want] and all(
    r[k]["alias"] == a and abs(r[k]["acc,none"] - acc) <= 1e-12 and abs(r[k]["acc_stderr,none"] - se) <= 1e-12 and
    set(r[k]) == {"alias", "acc,none", "acc_stderr,none"} for k, a, acc, se in want)
check(ok, "mmlu: the results in the harness's order and aliases (mmlu, \" - humanities\", \"  - formal_logic\", ...), "
      "each subject's acc and stderr, each group's acc weighted by its subjects' documents with the pooled stderr "
      "(mmlu %.6f +- %.6f)" % want[0][2:], "%s\n%s" % ([(k, r[k]) for k in list(r)[:3]], want[:3]))
groups = ["mmlu", "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"]
check(list(got.get("groups", {})) == groups and all(got["groups"][g] == r[g] for g in groups) and
      {k: got["versions"][k] for k in groups} == {g: 2 for g in groups} and
      all(got["versions"][t] == 1.0 and got["n-shot"][t] == 0 and got["n-samples"][t]["original"] ==
          len(mdata[t]) for t in all_tasks) and set(got["n-shot"]) == set(all_tasks) and
      got["group_subtasks"]["mmlu"] == ["mmlu_stem", "mmlu_other", "mmlu_social_sciences", "mmlu_humanities"] and
      got["group_subtasks"]["mmlu_stem"] == [t for t in all_tasks if MMLU_GROUP_OF[t[5:]] == "stem"] and
      got["higher_is_better"]["mmlu_other"] == {"acc": True},
      "mmlu: the JSON's groups, versions (groups 2, subjects 1), n-shot and n-samples (the subjects), group_subtasks, "
      "higher_is_better", json.dumps({k: got.get(k) for k in ("groups", "group_subtasks")})[:1500])
table = [line for line in out.splitlines() if line.startswith("|")]
check(len(table) == 2 + 62 + 2 + 5 and table[0].startswith("|Tasks") and table[2].startswith("|mmlu ") and
      table[3].startswith("| - humanities") and table[4].startswith("|  - formal_logic") and
      table[64].startswith("|Groups") and table[66].startswith("|mmlu ") and table[70].startswith("| - stem") and
      "|      2|none  |      |acc     |" in table[2] and "|      1|none  |     0|acc     |" in table[4],
      "mmlu: the tables, 62 task and group rows then the 5 groups'", "\n".join(table[:6] + table[62:]))
# 2-shot: mmlu_stem (its subjects from the file of all, the others set aside) and piqa, each subject's first 2 dev
# documents after its description; a subject alone
stem = [t for t in all_tasks if MMLU_GROUP_OF[t[5:]] == "stem"]
rc, out, got = mmlu_run(["piqa", "mmlu_stem"], ["mmlu_stem=" + mmlu_path, "piqa=" + paths["piqa"]],
                        ["--num-fewshot", "2", "--fewshot-data", "mmlu_stem=" + mmlu_dev, "piqa=" + pool_paths["piqa"]])
res, sums = mmlu_oracle(stem, 2), sums_of(out)
bad = [t for t in stem if t not in sums or abs(sums[t] - res[t][0]) > 1e-5 * abs(res[t][0])]
want = mmlu_expected(["mmlu_stem", "piqa"], res)
r = got["results"]
check(rc == 0 and not bad and list(r) == [k for k, *_ in want] and r["mmlu_stem"]["alias"] == "stem" and
      abs(r["mmlu_stem"]["acc,none"] - want[0][2]) <= 1e-12 and r["mmlu_anatomy"]["alias"] == " - anatomy" and
      r["piqa"]["alias"] == "piqa" and got["n-shot"]["mmlu_anatomy"] == 2 and "piqa" not in got["group_subtasks"][
          "mmlu_stem"] and "(%d of other subjects set aside), few-shot pool %s" % (
          len(mmlu_all) - sum(len(mdata[t]) for t in stem), mmlu_dev) in out,
      "mmlu_stem 2-shot with piqa: its 19 subjects' sums (first_n dev examples), the group's acc, the order and aliases",
      "%s\n%s" % (bad[:3], out[-1500:]))
rc, out, got = mmlu_run(["mmlu_anatomy"], ["mmlu_anatomy=" + mmlu_path])
check(rc == 0 and list(got["results"]) == ["mmlu_anatomy"] and got["results"]["mmlu_anatomy"]["alias"] == "anatomy"
      and "groups" not in got and got["group_subtasks"] == {"mmlu_anatomy": []},
      "mmlu_anatomy alone: its task_alias, no groups", out[-800:])

# 3e. BLiMP: its 67 phenomena read from one file of them all (routed by "UID"), each pair scored with no context
# ([EOD] before each sentence); --tasks blimp: each phenomenon's acc and the group's plain mean (weight_by_size False)
# with pooled_sample_stderr; 0-shot whatever --num-fewshot says (num_fewshot: 0 in its YAML)
BLIMP = [t.strip() for t in """adjunct_island anaphor_gender_agreement anaphor_number_agreement animate_subject_passive
animate_subject_trans causative complex_NP_island coordinate_structure_constraint_complex_left_branch
coordinate_structure_constraint_object_extraction determiner_noun_agreement_1 determiner_noun_agreement_2
determiner_noun_agreement_irregular_1 determiner_noun_agreement_irregular_2 determiner_noun_agreement_with_adj_2
determiner_noun_agreement_with_adj_irregular_1 determiner_noun_agreement_with_adj_irregular_2
determiner_noun_agreement_with_adjective_1 distractor_agreement_relational_noun distractor_agreement_relative_clause
drop_argument ellipsis_n_bar_1 ellipsis_n_bar_2 existential_there_object_raising existential_there_quantifiers_1
existential_there_quantifiers_2 existential_there_subject_raising expletive_it_object_raising inchoative intransitive
irregular_past_participle_adjectives irregular_past_participle_verbs irregular_plural_subject_verb_agreement_1
irregular_plural_subject_verb_agreement_2 left_branch_island_echo_question left_branch_island_simple_question
matrix_question_npi_licensor_present npi_present_1 npi_present_2 only_npi_licensor_present only_npi_scope passive_1
passive_2 principle_A_c_command principle_A_case_1 principle_A_case_2 principle_A_domain_1 principle_A_domain_2
principle_A_domain_3 principle_A_reconstruction regular_plural_subject_verb_agreement_1
regular_plural_subject_verb_agreement_2 sentential_negation_npi_licensor_present sentential_negation_npi_scope
sentential_subject_island superlative_quantifiers_1 superlative_quantifiers_2 tough_vs_raising_1 tough_vs_raising_2
transitive wh_island wh_questions_object_gap wh_questions_subject_gap wh_questions_subject_gap_long_distance
wh_vs_that_no_gap wh_vs_that_no_gap_long_distance wh_vs_that_with_gap wh_vs_that_with_gap_long_distance""".split()]
bdata = {}
for j, uid in enumerate(BLIMP):  # 2-4 pairs each (a plain mean of the accs differs from the weighted one)
    bdata["blimp_" + uid] = []
    for p in range(2 + j % 3):
        good = sentence()
        words = good[:-1].split(" ")
        bad_ = " ".join(words[1:] + words[:1]) + "." if p % 2 else good.replace("the ", "a ", 1)
        if (j + p) % 3 == 0:  # the corpus's sentence as the "bad" one: the model prefers it (acc 0)
            good, bad_ = bad_, good
        bdata["blimp_" + uid].append({"sentence_good": good, "sentence_bad": bad_, "field": "syntax",
                                      "linguistics_term": "t", "UID": uid, "simple_LM_method": True,
                                      "one_prefix_method": False, "two_prefix_method": False,
                                      "lexically_identical": False, "pair_id": p})
blimp_all = [d for p in range(4) for t in sorted(bdata) for d in bdata[t][p:p + 1]]  # interleaved phenomena
blimp_path = os.path.join(tmp, "blimp_all.jsonl")
open(blimp_path, "w").write("".join(json.dumps(d) + "\n" for d in blimp_all))
bres = oracle(bdata)
rc, out, got = mmlu_run(["blimp"], ["blimp=" + blimp_path], ["--num-fewshot", "2"])
bsums = sums_of(out)
bad = [t for t in bdata if t not in bsums or abs(bsums[t] - bres[t][0]) > 1e-5 * abs(bres[t][0])]
check(rc == 0 and not bad and "> blimp: %d documents of its 67 phenomena from %s\n" % (len(blimp_all), blimp_path)
      in out and "num_fewshot is 0 in its YAML, which the harness keeps over --num-fewshot 2" in out,
      "blimp: the summed log-likelihood of each of the 67 phenomena (%d pairs, routed by \"UID\", no context) equal to "
      "NumPy's; 0-shot under --num-fewshot 2" % len(blimp_all), "%s\n%s" % (bad[:3], out[-1500:]))
accs = [bres[t][1]["acc,none"] for t in sorted(bdata)]
ses = [bres[t][1]["acc_stderr,none"] for t in sorted(bdata)]
ns = [len(bdata[t]) for t in sorted(bdata)]
b_acc = sum(accs) / len(accs)  # aggregate_subtask_metrics(weight_by_size=False)
b_se = math.sqrt(sum((k - 1) * e ** 2 * k for k, e in zip(ns, ses)) / (sum(ns) - len(ns)) / sum(ns))
r = got["results"]
gb = r.get("blimp", {})
check(rc == 0 and list(r) == ["blimp"] + sorted(bdata) and gb.get("alias") == "blimp" and
      abs(gb.get("acc,none", -1) - b_acc) <= 1e-12 and abs(gb.get("acc_stderr,none", -1) - b_se) <= 1e-12 and
      abs(b_acc - sum(a * k for a, k in zip(accs, ns)) / sum(ns)) > 1e-6 and
      r["blimp_adjunct_island"]["alias"] == " - blimp_adjunct_island" and
      all(abs(r[t]["acc,none"] - bres[t][1]["acc,none"]) <= 1e-12 for t in bdata) and
      got["group_subtasks"]["blimp"] == ["blimp_" + u for u in BLIMP] and got["versions"]["blimp"] == 2.0 and
      got["versions"]["blimp_causative"] == 1.0 and got["n-shot"]["blimp_causative"] == 0,
      "blimp: the group's acc the plain mean of its 67 (%.6f; weighted would be %.6f), stderr pooled (%s), the "
      "tasks' aliases, group_subtasks in _blimp.yaml's order, versions" % (
          b_acc, sum(a * k for a, k in zip(accs, ns)) / sum(ns), b_se), "%s\n%s" % (gb, out[-1500:]))
table = [line for line in out.splitlines() if line.startswith("|")]
check(table[2].startswith("|blimp ") and table[3].startswith("| - blimp_adjunct_island ") and
      any(t.startswith("|blimp ") for t in table[70:]), "blimp: the tables (the group, its tasks; the groups' table)",
      "\n".join(table[:4] + table[68:]))
rc, out, got = mmlu_run(["blimp_npi_present_1", "blimp_wh_island"], ["blimp_npi_present_1=" + blimp_path,
                                                                       "blimp_wh_island=" + blimp_path])
check(rc == 0 and list(got["results"]) == ["blimp_npi_present_1", "blimp_wh_island"] and "groups" not in got and
      got["results"]["blimp_wh_island"]["alias"] == "blimp_wh_island" and
      abs(sums_of(out).get("blimp_wh_island", 0) - bres["blimp_wh_island"][0]) <= 1e-6 * abs(bres["blimp_wh_island"][0])
      and "(its phenomenon's; the others set aside)" in out,
      "blimp_<uid> alone, from the file of all: its own pairs, no group entry (%s, NumPy %.9g)" % (
          sums_of(out).get("blimp_wh_island"), bres["blimp_wh_island"][0]), out[-800:])

# 3f. mmlu_continuation: the same subjects scored on the answers' texts (acc, acc_norm), 1-shot from the first dev
# document; the group's acc weighted by documents, its inline groups stem/other/social sciences/humanities (no
# version), their subjects without task_alias
def cont_doc(d):  # hails/mmlu_no_train's answer: the index (a letter of this fixture's becomes its index)
    a = d["answer"]
    return dict(d, answer="ABCD".index(a) if isinstance(a, str) else a)


cdata = {"mmlu_continuation_" + t[5:]: [cont_doc(d) for d in mdata[t]] for t in mdata}
cdev = {"mmlu_continuation_" + t[5:]: [cont_doc(d) for d in mdev[t]] for t in mdev}
cont_path, cont_dev = os.path.join(tmp, "mmlu_cont_test.jsonl"), os.path.join(tmp, "mmlu_cont_dev.jsonl")
open(cont_path, "w").write("".join(json.dumps(cont_doc(d)) + "\n" for d in mmlu_all))
open(cont_dev, "w").write("".join(json.dumps(d) + "\n" for t in sorted(cdev) for d in cdev[t]))
for nshot in (0, 2):
    t = "mmlu_continuation_anatomy"
    rc, out = run([TOOL, "mc", t, cont_path, str(nshot), cont_dev if nshot else "-", "1234"])
    got = [json.loads(line) for line in out.splitlines()] if rc == 0 else None
    want = [{"context": c, "choices": doc_of(t, d)[1], "gold": doc_of(t, d)[2]}
            for d, c in zip(cdata[t], contexts(t, cdata[t], nshot, cdev[t]))]
    check(got == want, "%s %d-shot from the file of all subjects: its description, prompts, choices and gold as the "
          "harness builds them" % (t, nshot), "\n%s\n%s" % (got and got[:1], want[:1]))
cres = oracle(cdata, 1, cdev)
rc, out, got = mmlu_run(["mmlu_continuation"], ["mmlu_continuation=" + cont_path],
                        ["--num-fewshot", "1", "--fewshot-data", "mmlu_continuation=" + cont_dev])
csums = sums_of(out)
bad = [t for t in cdata if t not in csums or abs(csums[t] - cres[t][0]) > 1e-5 * abs(cres[t][0])]
check(rc == 0 and not bad, "mmlu_continuation 1-shot: each subject's summed log-likelihood (the answers' texts after "
      "its description and first dev example) equal to NumPy's", "%s\n%s" % (bad[:3], out[-1500:]))


def cont_group(members):  # aggregate_subtask_metrics (weight_by_size) and pooled_sample_stderr of acc
    m = [cres[t][1]["acc,none"] for t in members]
    se = [cres[t][1]["acc_stderr,none"] for t in members]
    n = [len(cdata[t]) for t in members]
    var = sum((k - 1) * e ** 2 * k for k, e in zip(n, se)) / (sum(n) - len(n))
    return sum(a * k for a, k in zip(m, n)) / sum(n), math.sqrt(var / sum(n))


want = [("mmlu_continuation", "mmlu (continuation)") + cont_group(sorted(cdata))]
for g in ("humanities", "other", "social sciences", "stem"):
    mem = sorted(t for t in cdata if MMLU_GROUP_OF[t[18:]] == g.replace(" ", "_"))
    want.append((g, " - " + g) + cont_group(mem))
    want += [(t, "  - " + t, cres[t][1]["acc,none"], cres[t][1]["acc_stderr,none"]) for t in mem]
r = got["results"]
ok = rc == 0 and list(r) == [k for k, *_ in want] and all(
    r[k]["alias"] == a and abs(r[k]["acc,none"] - v) <= 1e-12 and abs(r[k]["acc_stderr,none"] - e) <= 1e-12
    for k, a, v, e in want) and all(abs(r[t]["acc_norm,none"] - cres[t][1]["acc_norm,none"]) <= 1e-12 for t in cdata)
check(ok and "acc_norm,none" not in r["stem"] and got["versions"]["mmlu_continuation"] == 2 and
      "stem" not in got["versions"] and got["versions"]["mmlu_continuation_anatomy"] == 1.0 and
      got["group_subtasks"]["mmlu_continuation"] == ["stem", "other", "social sciences", "humanities"] and
      got["n-shot"]["mmlu_continuation_anatomy"] == 1 and
      any(line.startswith("| - stem ") and "|    N/A|" in line for line in out.splitlines()),
      "mmlu_continuation: every entry's acc (and the subjects' acc_norm) and stderr, the order and aliases (mmlu "
      "(continuation), \" - humanities\", \"  - mmlu_continuation_formal_logic\"), the inline groups without a version",
      "%s\n%s" % ([(k, r.get(k)) for k, *_ in want[:3]], want[:3]))

# 4. bad input: exit 1 with one error naming the file and line, the field, the flag
def refused(what, tasks, extra, needle, pth=None):
    global paths
    saved = dict(paths)
    if pth:
        paths.update(pth)
    rc, out = evaluate(tasks, extra)
    paths = saved
    check(rc == 1 and needle in out and "Traceback" not in out, "refused: " + what, "rc=%d\n%s" % (rc, out[-600:]))


bad = os.path.join(tmp, "bad.jsonl")
good = json.dumps(data["piqa"][0])
for name, lines, needle in [("malformed JSON line", [good, '{"goal": "x"', good], "bad.jsonl:2: not valid JSON"),
                            ("a field missing", [good, json.dumps({"goal": "a", "sol1": "b", "label": 0})],
                             "bad.jsonl:2: no \"sol2\" field"),
                            ("a label outside the choices", [json.dumps(dict(data["piqa"][0], label=2))],
                             "bad.jsonl:1: the gold label 2 is outside the 2 choices"),
                            ("a string where a label is due", [json.dumps(dict(data["piqa"][0], label="x"))],
                             "bad.jsonl:1: \"label\" is not a non-negative integer label"),
                            ("a label of 1e40 (fuzz_evaluate_mc)", ['{"goal": "g", "sol1": "a", "sol2": "b", '
                                                                   '"label": 1e40}'],
                             "bad.jsonl:1: \"label\" is not a non-negative integer label"),
                            ("an empty line", [good, "", good], "bad.jsonl:2: empty line"),
                            ("an empty file", [], "no documents (an empty file)")]:
    open(bad, "w").write("\n".join(lines) + ("\n" if lines else ""))
    refused(name, ["piqa"], [], needle, {"piqa": bad})
open(bad, "w").write(json.dumps(dict(data["arc_easy"][0], answerKey="Z")) + "\n")
refused("ARC answerKey not among choices.label", ["arc_easy"], [], "bad.jsonl:1: answerKey \"Z\" is not one of "
        "choices.label", {"arc_easy": bad})
refused("missing task file", ["piqa"], [], "--task-data piqa=%s/nope.jsonl: cannot open" % tmp,
        {"piqa": tmp + "/nope.jsonl"})
rc, out = run([EVAL, "--tasks", "piqa,boolq", "--task-data", "piqa=" + paths["piqa"], "--load", ck, "--micro-batch-size", "2"] + MODEL, ok=False)
check(rc == 1 and "--task-data boolq=FILE.jsonl is required" in out, "refused: a task without --task-data", out[-400:])
refused("wikitext103 (not a harness name)", ["wikitext103"], [], "wikitext103 is not supported yet: it is not a "
        "harness task name", {"wikitext103": paths["piqa"]})
refused("--num-fewshot with wikitext", ["wikitext"], ["--num-fewshot", "1", "--fewshot-data",
                                                     "wikitext=" + paths["wikitext"]], "wikitext scores whole documents")
# the harness's tags lambada and lambada_cloze: their four tasks, each from its own file, each an entry of its own
tags_js = os.path.join(tmp, "tags.json")
rc, out = run([EVAL, "--tasks", "lambada_cloze,lambada", "--task-data", "lambada_openai=" + paths["lambada_openai"],
               "lambada_standard=" + paths["lambada_openai"], "lambada_openai_cloze_yaml=" +
               paths["lambada_openai_cloze_yaml"], "lambada_standard_cloze_yaml=" + paths["lambada_openai_cloze_yaml"],
               "--load", ck, "--micro-batch-size", "4", "--output-path", tags_js] + MODEL, ok=False)
got, ts = json.load(open(tags_js)) if rc == 0 else {"results": {}}, sums_of(out)
four = ["lambada_openai", "lambada_openai_cloze_yaml", "lambada_standard", "lambada_standard_cloze_yaml"]
check(rc == 0 and list(got["results"]) == four and "groups" not in got and got["group_subtasks"] == {t: [] for t in four}
      and all(abs(ts.get(t, 0) - (want_cloze if "cloze" in t else want_lambada)) <= 1e-6 * abs(want_lambada)
              for t in four) and want_cloze != want_lambada,
      "the tags lambada and lambada_cloze: their four tasks, each from its file, no group entry; the cloze prompt "
      "scores differently (%s)" % ts, out[-1200:])
# the tag paloma: its 16 tasks (here all from paloma_ptb's file), each an entry under its task_alias, sorted by name
PALOMA = {"paloma_4chan_meta_sep": "4chan", "paloma_c4_100_domains": "C4 100 Domains", "paloma_c4_en": "C4",
          "paloma_dolma-v1_5": "Dolma V1.5", "paloma_dolma_100_programing_languages": "100 PLs",
          "paloma_dolma_100_subreddits": "100 Subreddits", "paloma_falcon-refinedweb": "Falcon", "paloma_gab": "Gab",
          "paloma_m2d2_s2orc_unsplit": "M2D2 S2ORC", "paloma_m2d2_wikipedia_unsplit": "M2D2 Wikipedia",
          "paloma_manosphere_meta_sep": "Manosphere", "paloma_mc4": "mC4", "paloma_ptb": "PTB",
          "paloma_redpajama": "RedPajama", "paloma_twitterAAE_HELM_fixed": "Twitter AAE",
          "paloma_wikitext_103": "Wikitext-103"}  # lm-eval 0.4.9's paloma_*.yaml: task and task_alias
rc, out = run([EVAL, "--tasks", "paloma", "--task-data"] + ["%s=%s" % (t, paths["paloma_ptb"]) for t in PALOMA] +
              ["--load", ck, "--micro-batch-size", "4"] + MODEL, ok=False)
got = json.loads(out[out.index("{"):out.rindex("}") + 1]) if rc == 0 else {"results": {}}
ps = sums_of(out)
check(rc == 0 and list(got["results"]) == sorted(PALOMA) and "groups" not in got and
      [got["results"][t]["alias"] for t in sorted(PALOMA)] == [PALOMA[t] for t in sorted(PALOMA)] and
      all(abs(ps.get(t, 0) - want_paloma) <= 1e-6 * abs(want_paloma) for t in PALOMA) and want_paloma != 0,
      "the tag paloma: its 16 tasks under their task_alias (PTB, 4chan, ...), sorted by name, each one's sum",
      out[-1500:])
# the group xcopa: its 11 languages' tasks, each from its own file (here the first 3-9 of the xcopa_et fixture's
# documents, so that the sizes differ), each with its language's connectors; the group's acc weighted by documents
# and its stderr pooled (_xcopa.yaml: weight_by_size True), version 1.0, the tasks' aliases " - xcopa_et"
XCOPA = sorted("xcopa_" + lang for lang in XCOPA_CONNECTOR)
xdata = {t: data["xcopa_et"][:3 + k % 7] for k, t in enumerate(XCOPA)}
for t in XCOPA:
    open(os.path.join(tmp, t + ".jsonl"), "w").write("".join(json.dumps(d) + "\n" for d in xdata[t]))
xres = oracle(xdata)
xjs = os.path.join(tmp, "xcopa.json")
rc, out = run([EVAL, "--tasks", "xcopa", "--task-data"] + ["%s=%s" % (t, os.path.join(tmp, t + ".jsonl"))
              for t in XCOPA] + ["--load", ck, "--micro-batch-size", "4", "--output-path", xjs] + MODEL, ok=False)
got = json.load(open(xjs)) if rc == 0 else {"results": {}}
xs, r = sums_of(out), got["results"]
n_ = [len(xdata[t]) for t in XCOPA]
accs, ses = [xres[t][1]["acc,none"] for t in XCOPA], [xres[t][1]["acc_stderr,none"] for t in XCOPA]
gacc = sum(a * k for a, k in zip(accs, n_)) / sum(n_)
gse = math.sqrt(sum((k - 1) * e ** 2 * k for k, e in zip(n_, ses)) / (sum(n_) - len(n_)) / sum(n_))
table = [line for line in out.splitlines() if line.startswith("|")]
conds = rc == 0 and {
    "entries": list(r) == ["xcopa"] + XCOPA,
    "sums": all(abs(xs.get(t, 0) - xres[t][0]) <= 1e-6 * abs(xres[t][0]) for t in XCOPA),
    "11 sums": len({round(xres[t][0], 6) for t in XCOPA}) == len(XCOPA),
    "tasks": all(abs(r[t]["acc,none"] - xres[t][1]["acc,none"]) <= 1e-12 and r[t]["alias"] == " - " + t
                 for t in XCOPA),
    "group": r["xcopa"]["alias"] == "xcopa" and abs(r["xcopa"]["acc,none"] - gacc) <= 1e-12 and
    abs(r["xcopa"]["acc_stderr,none"] - gse) <= 1e-12 and abs(gacc - np.mean(accs)) > 1e-9 and
    got["groups"]["xcopa"]["acc,none"] == r["xcopa"]["acc,none"],
    "json": got["group_subtasks"]["xcopa"] == XCOPA and got["versions"]["xcopa"] == 1.0 and
    got["versions"]["xcopa_zh"] == 1.0,
    "tables": table[2].startswith("|xcopa ") and table[3].startswith("| - xcopa_et|") and
    any(t.startswith("|Groups") for t in table) and table[-1].startswith("|xcopa ")}
check(conds and all(conds.values()),
      "the group xcopa: its 11 tasks from a file each, each language's connectors (11 different sums, as NumPy's); "
      "the group's acc weighted by documents (%.6f; the plain mean would be %.6f), stderr pooled; aliases, "
      "group_subtasks, versions, both tables" % (gacc, np.mean(accs)), "%s\n%s\n%s" % (conds, r.get("xcopa"),
                                                                                        out[-1500:]))
# the group pawsx: group_subtasks in its YAML's order (en first), the entries sorted by name, version 0.0; the
# documents with an empty sentence dropped from en's file, as process_docs drops them (and said)
PAWSX = ["paws_en", "paws_de", "paws_es", "paws_fr", "paws_ja", "paws_ko", "paws_zh"]
rc, out = run([EVAL, "--tasks", "pawsx", "--task-data"] + ["%s=%s" % (t, paths["paws_en" if t < "paws_g" else
              "paws_ja"]) for t in PAWSX] + ["--load", ck, "--micro-batch-size", "4"] + MODEL, ok=False)
got = json.loads(out[out.index("{"):out.rindex("}") + 1]) if rc == 0 else {"results": {}}
n_en, n_ja = len(kept("paws_en", data["paws_en"])), len(data["paws_ja"])
check(rc == 0 and list(got["results"]) == ["pawsx"] + sorted(PAWSX) and got["group_subtasks"]["pawsx"] == PAWSX and
      got["versions"]["pawsx"] == 0 and got["versions"]["paws_en"] == 1.0 and
      "> paws_en: %d documents from %s (%d more with an empty sentence dropped, as the harness's process_docs drops "
      "them)" % (n_en, paths["paws_en"], len(data["paws_en"]) - n_en) in out and
      "> paws_ja: %d documents from %s\n" % (n_ja, paths["paws_ja"]) in out and
      abs(got["results"]["pawsx"]["acc,none"] - sum((n_en if t < "paws_g" else n_ja) * got["results"][t]["acc,none"]
                                                    for t in PAWSX) / (4 * n_en + 3 * n_ja)) < 1e-12,
      "the group pawsx: group_subtasks in its YAML's order, the entries by name, version 0; en's empty sentences "
      "dropped (and said), ja's kept; acc weighted by documents", out[-1500:])
rc, out = run([EVAL, "--tasks", "xcopa", "--task-data"] + ["%s=%s" % (t, paths["xcopa_et"]) for t in XCOPA[1:]] +
              ["--load", ck, "--micro-batch-size", "2"] + MODEL, ok=False)
check(rc == 1 and "--task-data xcopa_et=FILE.jsonl is required" in out, "refused: a group's task without its file",
      out[-600:])
refused("one file for xcopa", ["xcopa"], [], "--task-data xcopa=%s: xcopa is the harness's group for 11 tasks "
        "(xcopa_et, ...), each read from its own file: give --task-data xcopa_et=FILE.jsonl and the others'" %
        paths["xcopa_et"], {"xcopa": paths["xcopa_et"]})
refused("one file for a tag", ["glue"], [], "--task-data glue=%s: glue is the harness's tag for 9 tasks (cola, ...), "
        "each read from its own file: give --task-data cola=FILE.jsonl and the others'" % paths["cola"],
        {"glue": paths["cola"]})
rc, out = run([EVAL, "--tasks", "anli", "--task-data", "anli_r1=" + paths["anli_r1"], "--load", ck,
               "--micro-batch-size", "2"] + MODEL, ok=False)
check(rc == 1 and "--task-data anli_r2=FILE.jsonl is required" in out, "refused: a tag's task without its file",
      out[-600:])
rc, out = run([EVAL, "--tasks", "lambada_standard", "--task-data", "lambada_standard=" + paths["lambada_openai"],
               "--load", ck, "--micro-batch-size", "4", "--bootstrap-iters", "0"] + MODEL, ok=False)
check(rc == 0 and '"perplexity_stderr,none":\t"N/A"' in out and
      abs(sums_of(out).get("lambada_standard", 0) - want_lambada) <= 1e-6 * abs(want_lambada),
      "lambada_standard: the same scoring on its file; --bootstrap-iters 0: stderr N/A", out[-800:])
open(bad, "w").write(json.dumps({"article": "a", "problems": "[{'answer': 'A', 'options': ['a', 'b', 'c', 'd'], "
                                                           "'question': 'q'"}) + "\n")
refused("a RACE problems literal cut short", ["race"], [], "bad.jsonl:1: \"problems\" is not a Python list literal: "
        "a missing ',' or '}' at character", {"race": bad})
open(bad, "w").write(json.dumps({"sentence": "no blank here", "option1": "a", "option2": "b", "answer": "1"}) + "\n")
refused("a WinoGrande sentence without the blank", ["winogrande"], [], "bad.jsonl:1: \"sentence\" has no \"_\"",
        {"winogrande": bad})
refused("an unknown task", ["nosuch"], [], "unknown task nosuch", {"nosuch": paths["piqa"]})
open(bad, "w").write(json.dumps(dict(data["record"][0], answers=["!zz", data["record"][0]["entities"][0]])) + "\n")
refused("record: the first answer (sorted) not among the entities", ["record"], [], "bad.jsonl:1: the first answer "
        "\"!zz\" (sorted) is not among \"entities\"", {"record": bad})
open(bad, "w").write(json.dumps(dict(data["record"][0], entities=[])) + "\n")
refused("record: no entities", ["record"], [], "bad.jsonl:1: \"entities\" is empty", {"record": bad})
refused("triviaqa with --max-gen-toks leaving no room for the context", ["triviaqa"], ["--max-gen-toks", "64"],
        "--max-gen-toks 64: triviaqa generates up to 64 tokens after its context within --seq-length 64")
open(bad, "w").write(json.dumps(dict(data["triviaqa"][0], answer={"aliases": []})) + "\n")
refused("triviaqa without aliases", ["triviaqa"], [], 'bad.jsonl:1: "answer.aliases" is empty', {"triviaqa": bad})
open(bad, "w").write(json.dumps(dict(data["triviaqa"][0], answer="x")) + "\n")
refused("triviaqa with an answer that is not an object", ["triviaqa"], [], 'bad.jsonl:1: "answer" is not an object',
        {"triviaqa": bad})
open(bad, "w").write(json.dumps(dict(data["gsm8k"][0], answer=7)) + "\n")
refused("gsm8k with an answer that is not a string", ["gsm8k"], ["--num-fewshot", "0"],
        'bad.jsonl:1: "answer" is not a string', {"gsm8k": bad})
open(bad, "w").write(json.dumps(dict(data["gsm8k"][0], answer="#### 1\x00")) + "\n")
refused("a task file's string holding U+0000", ["gsm8k"], ["--num-fewshot", "0"],
        "bad.jsonl:1: a string holds U+0000", {"gsm8k": bad})
refused("gsm8k's default 5 shots without --fewshot-data", ["gsm8k"], [], "gsm8k runs 5-shot by default (its YAML's "
        "num_fewshot, as the harness does without --num-fewshot): --fewshot-data gsm8k=FILE.jsonl is required")
refused("--fewshot-data for a task run 0-shot", ["gsm8k", "piqa"], ["--num-fewshot", "0", "--fewshot-data",
        "gsm8k=" + pool_paths["gsm8k"]], "--fewshot-data is read only with --num-fewshot N > 0")
refused("--fewshot-data for a task whose default is 0-shot", ["gsm8k", "piqa"], ["--fewshot-data", "gsm8k=" +
        pool_paths["gsm8k"], "--fewshot-data", "piqa=" + pool_paths["piqa"]], "--fewshot-data piqa=%s: piqa runs "
        "0-shot" % pool_paths["piqa"])
refused("--fewshot-data for gsm8k_cot (its examples are its YAML's)", ["gsm8k_cot"], ["--fewshot-data",
        "gsm8k_cot=" + pool_paths["gsm8k"]], "gsm8k_cot's examples are the 8 of its YAML (fewshot_config.samples, "
        "sampler first_n); it reads no few-shot file")
refused("gsm8k_cot with 9 examples", ["gsm8k_cot"], ["--num-fewshot", "9"], "--num-fewshot 9: gsm8k_cot's examples "
        "are the 8 of its YAML, taken in order (the harness's first_n sampler stops: \"number of fewshot samples "
        "requested exceeds the 8 that are available\")")
refused("--fewshot-data for gsm8k_cot_zeroshot (always 0-shot)", ["gsm8k_cot_zeroshot"], ["--num-fewshot", "2",
        "--fewshot-data", "gsm8k_cot_zeroshot=" + pool_paths["gsm8k"]], "--fewshot-data gsm8k_cot_zeroshot=%s: "
        "gsm8k_cot_zeroshot runs 0-shot (its YAML sets num_fewshot: 0, which the harness keeps over --num-fewshot)"
        % pool_paths["gsm8k"])
refused("lambada_openai_mt_stablelm_de (0.4.9 cannot load it)", ["lambada_openai_mt_stablelm_de"], [],
        "lambada_openai_mt_stablelm_de is not supported yet: it cannot be run by lm-eval 0.4.9",
        {"lambada_openai_mt_stablelm_de": paths["lambada_openai"]})
refused("the truthfulqa tag", ["truthfulqa"], [], "truthfulqa is not supported yet: it is the harness's tag",
        {"truthfulqa": paths["truthfulqa_mc1"]})
refused("truthfulqa_gen (BLEU and ROUGE)", ["truthfulqa_gen"], [], "truthfulqa_gen is not supported yet: it scores "
        "generations by BLEU, ROUGE", {"truthfulqa_gen": paths["truthfulqa_mc1"]})
open(bad, "w").write(json.dumps(dict(data["truthfulqa_mc2"][0], mc2_targets={"choices": ["a", "b"], "labels": [1]}))
                     + "\n")
refused("truthfulqa_mc2 labels not one per choice", ["truthfulqa_mc2"], [], 'bad.jsonl:1: "mc2_targets.labels" is not '
        "a list of 2 labels (one per choice)", {"truthfulqa_mc2": bad})
refused("gsm8k_cot_llama (a chat-template prompt)", ["gsm8k_cot_llama"], [], "gsm8k_cot_llama is not supported yet: "
        "it is written for Llama-3-Instruct's chat template", {"gsm8k_cot_llama": paths["gsm8k"]})
open(bad, "w").write(json.dumps(dict(data["gsm8k"][0], answer="so #### [1, 2] ")) + "\n")
refused("a GSM8K target in brackets (a Python list to the harness)", ["gsm8k_cot"], [], 'bad.jsonl:1: the target '
        '"[1, 2]" is in brackets', {"gsm8k_cot": bad})
refused("webqs few-shot", ["webqs"], ["--num-fewshot", "1", "--fewshot-data", "webqs=" + paths["webqs"]],
        "webqs's few-shot examples are not well defined in the harness")
open(bad, "w").write(json.dumps(dict(data["copa"][0], question="why")) + "\n")
refused("a COPA question other than cause/effect", ["copa"], [], 'bad.jsonl:1: "question" is "why"; expected "cause" '
        'or "effect"', {"copa": bad})
open(bad, "w").write(json.dumps(dict(data["multirc"][0], answer="a\\nb")) + "\n")
refused("a MultiRC answer with a backslash", ["multirc"], [], 'bad.jsonl:1: "answer" holds a backslash',
        {"multirc": bad})
open(bad, "w").write(json.dumps(dict(data["cb"][0], label=3)) + "\n")
refused("a CB label outside its 3 choices", ["cb"], [], "bad.jsonl:1: the gold label 3 is outside the 3 choices",
        {"cb": bad})
open(bad, "w").write(json.dumps(dict(data["logiqa"][0], label="e")) + "\n")
refused("a LogiQA label other than a-d", ["logiqa"], [], 'bad.jsonl:1: "label" is "e"; expected one of a, b, c, d',
        {"logiqa": bad})
open(bad, "w").write(json.dumps(dict(data["mathqa"][0], options="a ) 1 , b ) 2", correct="c")) + "\n")
refused("a MathQA answer past the options its regex finds", ["mathqa"], [], "bad.jsonl:1: the gold label 2 is outside "
        "the 1 choices", {"mathqa": bad})
open(bad, "w").write(json.dumps(dict(data["pubmedqa"][0], final_decision="Yes")) + "\n")
refused("a PubMedQA final_decision other than yes/no/maybe", ["pubmedqa"], [], 'bad.jsonl:1: "final_decision" is "Yes"'
        "; expected yes, no or maybe", {"pubmedqa": bad})
refused("sst (lm-eval 0.2.0's name)", ["sst"], [], "sst is not supported yet: it is lm-eval 0.2.0's name",
        {"sst": paths["sst2"]})
open(bad, "w").write(json.dumps(dict(data["webqs"][0], answers=[])) + "\n")
refused("webqs without answers", ["webqs"], [], 'bad.jsonl:1: "answers" is empty', {"webqs": bad})
refused("--num-fewshot without --fewshot-data", ["piqa"], ["--num-fewshot", "1"], "--fewshot-data piqa=FILE.jsonl "
        "is required")
refused("a few-shot pool smaller than the draw", ["piqa"], ["--num-fewshot", "9", "--fewshot-data",
                                                            "piqa=" + pool_paths["piqa"]], "the harness's sampler draws 10")
refused("an existing --output-path", ["piqa"], ["--output-path", js], "the file exists; evaluate_zeroshot does not "
        "overwrite it")
refused("--tasks with --task", ["piqa"], ["--task", "LAMBADA"], "goes without --task")
refused("--task-data naming a task not in --tasks", ["piqa"], ["--task-data", "boolq=" + paths["boolq"]],
        "boolq is not one of --tasks piqa")
# MMLU: a subject outside MMLU, fewer than 4 choices, an answer outside A-D or 0-3, a group's file without one of its
# subjects, a subject named twice, more examples than a subject's dev documents, no --fewshot-data
m0 = mdata["mmlu_anatomy"][0]
paths["mmlu"], paths["mmlu_stem"] = mmlu_path, mmlu_path
for name, doc, needle in [
        ("an MMLU subject that is not one", dict(m0, subject="cooking"),
         'bad.jsonl:2: "subject" is "cooking", not one of MMLU\'s 57 subjects'),
        ("MMLU choices fewer than 4", dict(m0, choices=["a", "b", "c"]), 'bad.jsonl:2: "choices" has 3 entries'),
        ("an MMLU answer letter outside A-D", dict(m0, answer="E"), 'bad.jsonl:2: "answer" is "E"; expected 0-3'),
        ("an MMLU answer past the choices", dict(m0, answer=4), "bad.jsonl:2: the gold label 4 is outside the 4 "
         "choices")]:
    open(bad, "w").write(json.dumps(mmlu_all[0]) + "\n" + json.dumps(doc) + "\n")
    refused(name, ["mmlu"], [], needle, {"mmlu": bad})
open(bad, "w").write(json.dumps(dict(cdata["mmlu_continuation_anatomy"][0], answer="B")) + "\n")
refused("an mmlu_continuation answer letter", ["mmlu_continuation_anatomy"], [], 'bad.jsonl:1: "answer" is "B"; a '
        "continuation task's target is the answer's index", {"mmlu_continuation_anatomy": bad})
b0 = blimp_all[0]
for name, doc, needle in [
        ("a BLiMP UID that is not one", dict(b0, UID="cooking"), 'bad.jsonl:2: "UID" is "cooking", not one of '
         "BLiMP's 67 phenomena"),
        ("a BLiMP pair without its bad sentence", {k: v for k, v in b0.items() if k != "sentence_bad"},
         'bad.jsonl:2: no "sentence_bad" field')]:
    open(bad, "w").write(json.dumps(b0) + "\n" + json.dumps(doc) + "\n")
    refused(name, ["blimp_adjunct_island"], [], needle, {"blimp_adjunct_island": bad})
open(bad, "w").write("".join(json.dumps(d) + "\n" for d in blimp_all if d["UID"] != "passive_2"))
refused("a BLiMP file without one of the group's phenomena", ["blimp"], [], '--task-data blimp=%s: none of its %d '
        'documents is of UID "passive_2" (the group needs each of its phenomena)' %
        (bad, len(blimp_all) - len(bdata["blimp_passive_2"])), {"blimp": bad})
for name, task, doc, needle in [
        ("a Social IQa label outside 1-3", "social_iqa", dict(data["social_iqa"][0], label="0"),
         'bad.jsonl:1: "label" is 0; expected 1, 2 or 3'),
        ("CommonsenseQA's unlabelled test split", "commonsense_qa", dict(data["commonsense_qa"][0], answerKey=""),
         'bad.jsonl:1: "answerKey" is ""; expected one of A, B, C, D, E (tau/commonsense_qa\'s test split is '
         'unlabelled'),
        ("CommonsenseQA with 4 choices", "commonsense_qa", dict(data["commonsense_qa"][0], choices={
            "label": list("ABCD"), "text": ["a", "b", "c", "d"]}), 'bad.jsonl:1: "choices.text" has 4 entries'),
        ("an arithmetic document without its completion", "arithmetic_2da", {"context": "Q"},
         'bad.jsonl:1: no "completion" field'),
        ("a StoryCloze ending 3", "storycloze_2016", dict(data["storycloze_2016"][0], answer_right_ending=3),
         'bad.jsonl:1: "answer_right_ending" is 3; expected 1 or 2'),
        ("a HeadQA right answer 0", "headqa_en", dict(data["headqa_en"][0], ra=0), 'bad.jsonl:1: "ra" is 0; '
         'expected the right answer\'s number, from 1'),
        ("a HeadQA answer without its text", "headqa_en", dict(data["headqa_en"][0], answers=[{"aid": 1}]),
         'bad.jsonl:1: "answers"[0] has no "atext" string'),
        ("a QA4MRE answer id that is not a number", "qa4mre_2011", dict(data["qa4mre_2011"][0],
         correct_answer_id="x"), 'bad.jsonl:1: "correct_answer_id" is not a non-negative integer label'),
        ("a QA4MRE answer id past the options", "qa4mre_2011", dict(data["qa4mre_2011"][0], correct_answer_id="6"),
         'bad.jsonl:1: the gold label 5 is outside the 5 choices'),
        ("a WSC273 pronoun_loc past the text", "wsc273", dict(data["wsc273"][0], pronoun_loc=500),
         'bad.jsonl:1: "pronoun_loc" is 500: text[498] is outside the'),
        ("a WSC273 option without words", "wsc273", dict(data["wsc273"][0], options=["a", " "]),
         'bad.jsonl:1: "options"[1] has no words'),
        ("an XCOPA question other than cause/effect", "xcopa_zh", dict(data["xcopa_zh"][0], question="why"),
         'bad.jsonl:1: "question" is "why"; expected "cause" or "effect"'),
        ("a PAWS-X sentence2 of whitespace (process_docs fails on it)", "paws_en", dict(data["paws_en"][0],
         sentence2=" \u2003"), 'bad.jsonl:1: "sentence2" is whitespace only'),
        ("a PAWS-X file of empty sentences only", "paws_en", dict(data["paws_en"][0], sentence1=""),
         "each of its 1 documents has an empty sentence1 or sentence2, which the harness's process_docs drops"),
        ("a null sentence where process_docs does not drop it", "paws_ja", dict(data["paws_ja"][0], sentence1=None),
         'bad.jsonl:1: "sentence1" is not a string')]:
    open(bad, "w").write(json.dumps(doc) + "\n")
    refused(name, [task], [], needle, {task: bad})
open(bad, "w").write("".join(json.dumps(d) + "\n" for d in mmlu_all if d["subject"] != "virology"))
refused("an MMLU file without one of the group's subjects", ["mmlu"], [], '--task-data mmlu=%s: none of its %d '
        'documents is of subject "virology" (the group needs each of its subjects)' %
        (bad, len(mmlu_all) - len(mdata["mmlu_virology"])), {"mmlu": bad})
refused("a subject named twice (alone and in a group)", ["mmlu_stem", "mmlu_anatomy"], [],
        "--tasks mmlu_stem,mmlu_anatomy: mmlu_anatomy is listed twice (in mmlu_stem)", {"mmlu_anatomy": mmlu_path})
refused("more MMLU examples than a subject's dev documents", ["mmlu_stem"], ["--num-fewshot", "4", "--fewshot-data",
        "mmlu_stem=" + mmlu_dev], "--num-fewshot 4: --fewshot-data mmlu_stem=%s holds 3 abstract_algebra documents, "
        "taken in order (the harness's first_n sampler stops" % mmlu_dev)
refused("lm-eval 0.2's MMLU name", ["hendrycksTest-anatomy"], [], "hendrycksTest-anatomy is not supported yet: it is "
        "lm-eval 0.2's MMLU subject", {"hendrycksTest-anatomy": mmlu_path})
refused("MMLU examples without --fewshot-data", ["mmlu"], ["--num-fewshot", "1"], "--fewshot-data mmlu=FILE.jsonl is "
        "required (the harness draws mmlu's examples from its dev split)")
refused("XCOPA examples without --fewshot-data", ["xcopa_zh"], ["--num-fewshot", "1"], "--fewshot-data "
        "xcopa_zh=FILE.jsonl is required (the harness draws xcopa_zh's examples from its validation split)")
refused("WSC273 examples without --fewshot-data", ["wsc273"], ["--num-fewshot", "1"], "--fewshot-data "
        "wsc273=FILE.jsonl is required (the harness draws wsc273's examples from its test split (its only one; a "
        "document is not its own example))")
h = run([EVAL, "--help"])[1]
unlisted = [t for t in TASKS + ["lambada_standard", "triviaqa", "gsm8k", "gsm8k_cot", "gsm8k_cot_zeroshot", "mmlu",
                                 "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"]
            if not re.search(r"[ (]%s[,) \n]" % t, h) and not (t.startswith("paloma_") and "paloma_<subset>" in h)]
check("--tasks" in h and "--num-fewshot" in h and "--task-data" in h and "--task_list" in h and not unlisted,
      "--help lists the harness flags, evaluate.py's and every task", "not listed: %s" % unlisted)

# 6. evaluate.py's command line (evalharness_sh above)
res_json = os.path.join(tmp, "lambada_0shot.json")
rc, out = run(evalharness_sh(ck, "lambada,piqa,sst", res_json, ["lambada=" + paths["lambada_openai"],
                                                                "piqa=" + paths["piqa"], "sst=" + paths["sst2"]]),
              ok=False)
rc0, out0 = evaluate(["lambada_openai", "piqa", "sst2"], ["--bootstrap-iters", "0"])
s, s0 = sums_of(out), sums_of(out0)
got = json.load(open(res_json)) if rc == 0 and os.path.exists(res_json) else {"results": {}}
r0 = json.loads(out0[out0.index("{"):out0.rindex("}") + 1])["results"] if rc0 == 0 else {}
check(rc == 0 and rc0 == 0 and set(s) == {"lambada_openai", "piqa", "sst2"} and
      all(abs(s[t] - s0[t]) <= 1e-5 * abs(s0[t]) for t in s0) and set(got["results"]) == set(s) and
      all(got["results"][t]["acc,none"] == r0[t]["acc,none"] for t in ("piqa", "sst2")),
      "ds_evalharness.sh's command line: lambada (lambada_openai), piqa and sst (sst2) as --tasks scores them (%s), "
      "%s written" % (s, os.path.basename(res_json)), out[-1500:])
ev = re.search(r"evaluated (\d+) micro batches of 3 x up to 64 tokens \((\d+) in all\)", out)
check("the model arguments come from the checkpoint" in out and "Setting num_layers to 2 from checkpoint" in out and
      ev and int(ev.group(2)) < int(ev.group(1)) * 3 * 64 and "evaluation of lambada,piqa,sst ends in" in out,
      "the model from the checkpoint (the -1 placeholders), adaptive lengths (%s of %s tokens), evaluate.py's closing "
      "line" % (ev and ev.group(2), ev and int(ev.group(1)) * 3 * 64), out[-1500:])
# an MoE checkpoint (MoE/ds_evalharness.sh): its experts come from the checkpoint too
ck_moe = os.path.join(tmp, "ck_moe")
run([PRETRAIN] + MODEL + ["--num-experts", "2", "--topk", "2", "--micro-batch-size", "4", "--global-batch-size", "8",
                          "--data-path", os.path.join(tmp, "corpus_text_document"), "--split", "100,0,0", "--lr",
                          "3e-3", "--train-iters", "10", "--log-interval", "5", "--eval-iters", "0", "--save", ck_moe])
moe_json = os.path.join(tmp, "moe.json")
rc, out = run(evalharness_sh(ck_moe, "piqa", moe_json, ["piqa=" + paths["piqa"]]), ok=False)
rc0, out0 = run([EVAL, "--tasks", "piqa", "--task-data", "piqa=" + paths["piqa"], "--load", ck_moe,
                 "--micro-batch-size", "3", "--num-experts", "2", "--topk", "2", "--disable-moe-token-dropping"]
                + MODEL, ok=False)
s, s0 = sums_of(out), sums_of(out0)
check(rc == 0 and rc0 == 0 and "piqa" in s and abs(s["piqa"] - s0["piqa"]) <= 1e-5 * abs(s0["piqa"]) and
      "Setting num_experts to [2] from checkpoint" in out,
      "an MoE checkpoint: 2 experts, top-2, from the checkpoint (%s = %s)" % (s.get("piqa"), s0.get("piqa")),
      out[-1500:])
rc, out = run(evalharness_sh(ck, "all", os.path.join(tmp, "all.json"), ["piqa=" + paths["piqa"]]), ok=False)
check(rc == 1 and "--task_list all: name the tasks" in out, "refused: --task_list all (the harness's every task)",
      out[-400:])
rc, out = run(evalharness_sh(ck, "piqa", os.path.join(tmp, "x.json"), ["piqa=" + paths["piqa"]]) + ["--tasks", "piqa"],
              ok=False)
check(rc == 1 and "give one or the other" in out, "refused: --task_list with --tasks", out[-400:])
rc, out = run(evalharness_sh(ck, "piqa", res_json, ["piqa=" + paths["piqa"]]), ok=False)
check(rc == 1 and "--results_path %s: the file exists" % res_json in out, "refused: an existing --results_path",
      out[-400:])

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(summary())
