// Server-sent events from a fetch() body (a ReadableStream of bytes): yields each event's data
// (its `data:` lines joined with "\n"), as the HTML standard's event-stream parser does; events
// without data (comments, keep-alives) are skipped. UTF-8 characters split across network chunks
// are reassembled (TextDecoder in stream mode). No DOM: the Node tests import this file.
export async function* readEvents(stream) {
  const reader = stream.getReader();
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // Complete lines only; a trailing "\r" may yet be followed by "\n".
      for (;;) {
        const m = /\r\n|\n|\r(?!$)/.exec(buffer);
        if (!m) break;
        const line = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line[5] === ' ' ? 6 : 5));
        }
      }
      if (done) break;
    }
  } finally {
    reader.releaseLock();
  }
}
