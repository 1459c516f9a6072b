// Reads a PDF as a viewer would, with Mozilla's pdf.js: each page's size
// and text. And what its bytes hold: the fonts embedded, any raster image.

export interface ReadPdf {
  pages: Array<{ width: number, height: number, text: string }>
  /** Every page's text, joined. */
  text: string
}

/** Each page's size in points and its text, as pdf.js extracts it (items joined by spaces). */
export async function readPdf (bytes: Buffer): Promise<ReadPdf> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs')
  const document = await pdfjs.getDocument({ data: new Uint8Array(bytes), useSystemFonts: false, disableFontFace: true, isEvalSupported: false, verbosity: 0 }).promise
  const pages: ReadPdf['pages'] = []
  for (let number = 1; number <= document.numPages; number++) {
    const page = await document.getPage(number)
    const [, , width, height] = page.view
    const content = await page.getTextContent()
    pages.push({ width, height, text: content.items.map(item => ('str' in item ? item.str : '')).join(' ').replace(/\s+/g, ' ') })
  }
  await document.destroy()
  return { pages, text: pages.map(page => page.text).join('\n') }
}

/** What the file's objects say of its fonts and images (pdfkit writes object dictionaries uncompressed). */
export function pdfObjects (bytes: Buffer): { fontFiles: number, fonts: string[], images: number } {
  const raw = bytes.toString('latin1')
  return {
    fontFiles: (raw.match(/\/FontFile2 \d+ 0 R/g) ?? []).length,
    fonts: [...new Set([...raw.matchAll(/\/BaseFont \/([A-Za-z0-9+_-]+)/g)].map(match => match[1]))],
    images: (raw.match(/\/Subtype \/Image/g) ?? []).length
  }
}
