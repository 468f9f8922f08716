<?php
// A config answer that is invalid as a whole (wrong type, NaN, malformed JSON, too large).
declare(strict_types=1);

namespace RootTrace;

final class ConfigError extends \RuntimeException
{
}
