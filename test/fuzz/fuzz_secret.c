/*-------------------------------------------------------------------------
 *
 * fuzz_secret.c
 *	  libFuzzer target: src/kafka/secret.c, the masking of a client's
 *	  secrets in librdkafka's texts.
 *
 * The input is a size for the output buffer, a secret value and a text.
 * Whatever the input, the output is terminated within its buffer; a value
 * of at least 4 bytes (without the brackets of the mask) never appears in
 * it; and where the value and the text are valid UTF-8, so is the output:
 * neither a mask nor the cut splits a character.  Anything else aborts;
 * so does any memory error (AddressSanitizer, UBSan).  Built and run by
 * test/fuzz/run_fuzz.sh.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "mb/pg_wchar.h"
#include "nodes/parsenodes.h"
#include "nodes/value.h"

#include "kafka/kafka.h"

/* what secret.c takes from the server, done here */
bool
ssp_option_is_secret(const char *name)
{
	return true;
}

char *
defGetString(DefElem *def)
{
	return strVal(def->arg);
}

/* valid_utf8: is s, of len bytes, valid UTF-8? */
static bool
valid_utf8(const char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		int			l = pg_utf_mblen((const unsigned char *) s + i);

		if (i + l > len || !pg_utf8_islegal((const unsigned char *) s + i, l))
			return false;
		i += l;
	}
	return true;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t		outsize;
	size_t		vlen;
	char	   *value;
	char	   *text;
	char	   *out;
	String		arg;
	DefElem		def;
	ListCell	cell;
	List		options;
	SspSecrets *secrets;

	if (size < 2)
		return 0;
	outsize = 1 + data[0];
	vlen = Min((size_t) data[1], size - 2);
	value = strndup((const char *) data + 2, vlen);
	text = strndup((const char *) data + 2 + vlen, size - 2 - vlen);
	out = malloc(outsize);

	memset(&arg, 0, sizeof(arg));
	arg.type = T_String;
	arg.sval = value;
	memset(&def, 0, sizeof(def));
	def.type = T_DefElem;
	def.defname = "sasl.password";
	def.arg = (Node *) &arg;
	memset(&options, 0, sizeof(options));
	options.type = T_List;
	options.length = 1;
	options.max_length = 1;
	options.elements = &cell;
	cell.ptr_value = &def;

	secrets = ssp_secrets_collect(&options);
	ssp_secrets_mask(secrets, text, out, outsize);

	if (memchr(out, '\0', outsize) == NULL)
		abort();
	if (strlen(value) >= 4 && strpbrk(value, "[]") == NULL && strstr(out, value) != NULL)
		abort();
	if (valid_utf8(value, strlen(value)) && valid_utf8(text, strlen(text)) &&
		!valid_utf8(out, strlen(out)))
		abort();

	ssp_secrets_free(secrets);
	free(out);
	free(text);
	free(value);
	return 0;
}
