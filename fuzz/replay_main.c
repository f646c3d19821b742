/* SPDX-License-Identifier: BSD-2-Clause */
/* Runs a libFuzzer target over files or directories of inputs without libFuzzer, so
 * any compiler (and CI without clang) replays the corpus. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int run_path(const char *path, int *count)
{
	struct stat sb;
	struct dirent *e;
	DIR *d;

	if (stat(path, &sb))
		return -1;
	if (!S_ISDIR(sb.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char sub[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (run_path(sub, count)) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	int i, count = 0;

	for (i = 1; i < argc; i++) {
		if (run_path(argv[i], &count)) {
			fprintf(stderr, "cannot read %s\n", argv[i]);
			return 1;
		}
	}
	printf("replayed %d inputs\n", count);
	return count ? 0 : 1;
}
