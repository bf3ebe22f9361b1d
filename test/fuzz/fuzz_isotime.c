/*-------------------------------------------------------------------------
 *
 * fuzz_isotime.c
 *	  libFuzzer target: src/stream/isotime.c, the ISO 8601 timestamps that decode.c
 *	  reads without timestamptz_in, against glibc's timegm.
 *
 * What ssp_iso_timestamptz accepts must be a real date and time (timegm
 * normalises an impossible one, such as February 30, into another: the
 * fields then differ) and its value must be timegm's, less the offset,
 * plus the fraction.  Anything else aborts; so does any memory error
 * (AddressSanitizer, UBSan).  Built and run by test/fuzz/run_fuzz.sh.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "datatype/timestamp.h"
#include "utils/datetime.h"

#include "isotime.h"

/* the two things isotime.c takes from the server, done independently */
const int	day_tab[2][13] = {
	{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 0},
	{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 0}
};

/* days since 4713-11-24 BC (Julian day number), from days since 1970 */
int
date2j(int year, int month, int day)
{
	struct tm	tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	/* midnight: a whole number of days, before 1970 too */
	return (int) (timegm(&tm) / SECS_PER_DAY) + UNIX_EPOCH_JDATE;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);
	TimestampTz ts;
	struct tm	tm;
	struct tm	want;
	const char *p;
	int64		frac = 0;
	int64		scale = USECS_PER_SEC;
	int			sign = 0;
	int			oh = 0;
	int			om = 0;
	int64		expect;

	memcpy(text, data, size);
	text[size] = '\0';
	/* by length, as decode.c calls it; the NUL is for sscanf below */
	if (!ssp_iso_timestamptz(text, size, &ts))
	{
		free(text);
		return 0;
	}

	/* accepted: the digits where the form puts them */
	memset(&tm, 0, sizeof(tm));
	if (memchr(text, '\0', size) != NULL ||
		sscanf(text, "%4d-%2d-%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3 ||
		sscanf(text + 11, "%2d:%2d:%2d", &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 3)
	{
		fprintf(stderr, "accepted, but not of the form: \"%s\"\n", text);
		abort();
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	want = tm;
	expect = (int64) timegm(&tm);
	if (tm.tm_year != want.tm_year || tm.tm_mon != want.tm_mon || tm.tm_mday != want.tm_mday ||
		tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min || tm.tm_sec != want.tm_sec)
	{
		fprintf(stderr, "accepted a date or time that does not exist: \"%s\"\n", text);
		abort();
	}
	p = text + 19;
	if (*p == '.')
		while (*++p >= '0' && *p <= '9')
			frac += (*p - '0') * (scale /= 10);
	if (*p == '+' || *p == '-')
	{
		sign = *p == '-' ? -1 : 1;
		oh = (p[1] - '0') * 10 + (p[2] - '0');
		if (p[3] == ':')
			om = (p[4] - '0') * 10 + (p[5] - '0');
		else if (p[3] != '\0')
			om = (p[3] - '0') * 10 + (p[4] - '0');
	}
	expect = (expect - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY
			  - sign * (oh * SECS_PER_HOUR + om * SECS_PER_MINUTE)) * USECS_PER_SEC + frac;
	if (ts != expect)
	{
		fprintf(stderr, "\"%s\": " INT64_FORMAT ", timegm says " INT64_FORMAT "\n", text, ts, expect);
		abort();
	}
	free(text);
	return 0;
}
