/* The rule-based sentence splitter of preprocess_data --split-sentences: expected splits written by
 * hand for each rule (abbreviations, initials, decimals, quotes and brackets, ellipses, case of the
 * next word, Unicode), punkt's output shape (leading whitespace kept, trailing whitespace stripped),
 * and --keep-newlines (the sentences concatenate back to the right-stripped text). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "data/sentence_split.h"

static int passed, failed;

static void expect(const char *name, const char *text, int keep, const char *const *want) {
  zt_sentences s = {0};
  zt_sentence_split(text, strlen(text), keep, &s);
  size_t n = 0;
  while (want[n]) n++;
  int ok = s.n == n;
  for (size_t i = 0; ok && i < n; i++)
    ok = s.len[i] == strlen(want[i]) && memcmp(text + s.start[i], want[i], s.len[i]) == 0;
  if (ok) {
    passed++;
    printf("PASS %s\n", name);
  } else {
    failed++;
    printf("FAIL %s: got %zu sentences:", name, s.n);
    for (size_t i = 0; i < s.n; i++) printf(" [%.*s]", (int)s.len[i], text + s.start[i]);
    printf("\n");
  }
  zt_sentences_free(&s);
}

#define EXPECT(name, text, keep, ...)                 \
  do {                                                \
    const char *const w_[] = {__VA_ARGS__, NULL};     \
    expect(name, text, keep, w_);                     \
  } while (0)

static void expect_none(const char *name, const char *text) {
  zt_sentences s = {0};
  zt_sentence_split(text, strlen(text), 0, &s);
  if (s.n == 0) {
    passed++;
    printf("PASS %s\n", name);
  } else {
    failed++;
    printf("FAIL %s: %zu sentences\n", name, s.n);
  }
  zt_sentences_free(&s);
}

/* keep_newlines: the sentences are consecutive slices that cover the right-stripped text. */
static void expect_cover(const char *name, const char *text) {
  zt_sentences s = {0};
  size_t len = strlen(text), end = len;
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n' || text[end - 1] == '\t')) end--;
  zt_sentence_split(text, len, 1, &s);
  int ok = s.n > 1 && s.start[0] == 0;
  for (size_t i = 0; ok && i + 1 < s.n; i++) ok = s.start[i] + s.len[i] == s.start[i + 1];
  ok = ok && s.start[s.n - 1] + s.len[s.n - 1] == end;
  if (ok) {
    passed++;
    printf("PASS %s\n", name);
  } else {
    failed++;
    printf("FAIL %s (%zu sentences)\n", name, s.n);
  }
  zt_sentences_free(&s);
}

int main(void) {
  EXPECT("two plain sentences", "Hello world. This is a test.", 0, "Hello world.", "This is a test.");
  EXPECT("title abbreviation", "Mr. Smith went to Washington. He arrived.", 0, "Mr. Smith went to Washington.",
         "He arrived.");
  EXPECT("initials", "J. R. R. Tolkien wrote it. Then he slept.", 0, "J. R. R. Tolkien wrote it.",
         "Then he slept.");
  EXPECT("decimal number", "The value is 3.14 today. Next one.", 0, "The value is 3.14 today.", "Next one.");
  EXPECT("numeric abbreviations", "See Fig. 3 for details. Also No. 5 is here.", 0, "See Fig. 3 for details.",
         "Also No. 5 is here.");
  EXPECT("numeric abbreviation word before a capital", "He said no. Then he left.", 0, "He said no.",
         "Then he left.");
  EXPECT("e.g. and i.e.", "Use tools, e.g. Hammers. Fine, i.e. Done.", 0, "Use tools, e.g. Hammers.",
         "Fine, i.e. Done.");
  EXPECT("dotted acronym", "He lives in the U.S. He works.", 0, "He lives in the U.S. He works.");
  EXPECT("quote after period", "He said \"Stop.\" Then he left.", 0, "He said \"Stop.\"", "Then he left.");
  EXPECT("bracket after period", "(This is bracketed.) And this follows.", 0, "(This is bracketed.)",
         "And this follows.");
  EXPECT("curly quote after period", "He said \xe2\x80\x9cgo.\xe2\x80\x9d She went.", 0,
         "He said \xe2\x80\x9cgo.\xe2\x80\x9d", "She went.");
  EXPECT("ellipsis before lowercase", "Wait... what happened? Nothing!", 0, "Wait... what happened?", "Nothing!");
  EXPECT("ellipsis before capital", "I waited... Then it came.", 0, "I waited...", "Then it came.");
  EXPECT("unicode ellipsis", "I waited\xe2\x80\xa6 Then it came.", 0, "I waited\xe2\x80\xa6", "Then it came.");
  EXPECT("question and exclamation run", "Really?! Yes. No way!", 0, "Really?!", "Yes.", "No way!");
  EXPECT("lowercase next word", "version 2.0 is out. it is lowercase.", 0,
         "version 2.0 is out. it is lowercase.");
  EXPECT("next word opens a quote", "It ended. \"Next,\" he said.", 0, "It ended.", "\"Next,\" he said.");
  EXPECT("next word is a number", "It ended in 1990. 1991 was better.", 0, "It ended in 1990.",
         "1991 was better.");
  EXPECT("unicode capital next", "Il a dit non. \xc3\x89lodie est partie.", 0, "Il a dit non.",
         "\xc3\x89lodie est partie.");
  EXPECT("unicode lowercase next", "Il a dit non. \xc3\xa9lodie est partie.", 0,
         "Il a dit non. \xc3\xa9lodie est partie.");
  EXPECT("no punctuation", "no terminal punctuation here", 0, "no terminal punctuation here");
  EXPECT("no space after period", "see example.com. Next.", 0, "see example.com.", "Next.");
  EXPECT("leading whitespace kept, trailing stripped", "  Leading spaces. Next.  \n", 0, "  Leading spaces.",
         "Next.");
  EXPECT("newlines dropped between sentences", "A sentence.\n\nAnother one.\n", 0, "A sentence.", "Another one.");
  EXPECT("keep-newlines keeps them", "A sentence.\n\nAnother one.\n", 1, "A sentence.\n\n", "Another one.");
  EXPECT("newline inside a sentence stays", "One line\ncontinues here. Two.", 0, "One line\ncontinues here.",
         "Two.");
  expect_none("empty text", "");
  expect_none("whitespace-only text", " \n\t ");
  expect_cover("keep-newlines covers the text", "First one.\nSecond one!\n\n  Third? Yes.\n\n");
  expect_cover("keep-newlines covers, leading space", "  Mr. A met B. C.\tThen D... Fine.");
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
