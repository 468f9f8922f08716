<?php
// A network-level failure: refused, reset, timed out, malformed answer.
declare(strict_types=1);

namespace RootTrace;

class HttpError extends \RuntimeException
{
}
